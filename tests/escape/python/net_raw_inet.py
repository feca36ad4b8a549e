# expect-result: refused
# options: --network
# attack: with --network, a raw AF_INET socket: only TCP and UDP sockets may be created
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import socket
for fam in (socket.AF_INET, socket.AF_INET6):
    print('calling', flush=True)
    try:
        socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW if fam == socket.AF_INET else 58)
        print(MARK, 'raw socket of family', fam)
    except OSError as e:
        print(fam, 'denied:', e)
