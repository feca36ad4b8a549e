# expect-result: ok
# attack: the run is not root: uid/euid/gid/egid are the pool uid, never 0
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

ids = os.getuid(), os.geteuid(), os.getgid(), os.getegid()
print('ids', ids)
if 0 in ids:
    print(MARK, 'running with id 0')
if not all(10000 <= i <= 10999 for i in ids):
    print('ids outside the pool:', ids)
    sys.exit(3)
