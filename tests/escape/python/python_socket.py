# expect-result: ok
# attack: socket.socket() and a TCP connect to 127.0.0.1 without network
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(('127.0.0.1', 1))
    print(MARK, 'connected')
except OSError as e:
    print('denied:', type(e).__name__, e)
for fam in (socket.AF_INET6, socket.AF_UNIX, socket.AF_NETLINK, socket.AF_PACKET):
    try:
        socket.socket(fam, socket.SOCK_DGRAM)
        print(MARK, 'socket of family', fam)
    except OSError as e:
        print(fam, 'denied:', e)
