# expect-result: ok
# options: --network
# attack: a TCP server in a run with network: listen() is allowed because the run's network namespace is its own, holding only loopback; an interface beyond it would make the server reachable from elsewhere
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import array, fcntl, socket, struct, threading
SIOCGIFCONF = 0x8912
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(('127.0.0.1', 0))
s.listen(1)
port = s.getsockname()[1]
threading.Thread(target=lambda: s.accept()[0].sendall(b'hello'), daemon=True).start()
c = socket.create_connection(('127.0.0.1', port), timeout=5)
print('own loopback answers', c.recv(5))
buf = array.array('B', b'\0' * 40 * 32)
n = struct.unpack('iL', fcntl.ioctl(s.fileno(), SIOCGIFCONF, struct.pack('iL', len(buf), buf.buffer_info()[0])))[0]
names = sorted({buf[i:i + 16].tobytes().split(b'\0', 1)[0].decode() for i in range(0, n, 40)})
print('interfaces', names)
if names != ['lo']:
    print(MARK, 'the run sees interfaces beyond its loopback:', names)
