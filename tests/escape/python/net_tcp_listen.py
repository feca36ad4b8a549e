# expect-result: seccomp
# options: --network
# attack: with --network the run shares the host network namespace: a TCP listener there would be a server on the host
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(('127.0.0.1', 0))
print('bound', s.getsockname(), flush=True)
print('calling', flush=True)
s.listen(1)
print(MARK, 'listening on the host network at', s.getsockname())
