# expect-result: refused
# attack: mknod a character device for /dev/mem (1,1) in /tmp and read it
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import stat
p = '/tmp/mem-%d' % os.getpid()
print('calling', flush=True)
os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 1))
print(MARK, 'device node created')
with open(p, 'rb') as f:
    print(MARK, 'read', len(f.read(16)), 'bytes of physical memory')
