# expect-result: ok|error
# options: --network
# attack: reach difysandbox-runner, which makes sandboxes as root: its socket path, and abstract names
import os, socket
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

for path in ('/run/difysandbox/runner.sock', '/run/difysandbox', '/run'):
    if os.path.exists(path):
        print(MARK, path, 'is visible inside the run')
for kind in (socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
    for address in ('/run/difysandbox/runner.sock', '\0difysandbox-runner', '\0difysandbox'):
        try:
            s = socket.socket(socket.AF_UNIX, kind)
        except OSError as e:
            print('socket refused:', e.errno)
            continue
        try:
            s.connect(address)
            print(MARK, 'connected to', repr(address))
        except OSError as e:
            print('connect refused:', repr(address), e.errno)
        finally:
            s.close()
