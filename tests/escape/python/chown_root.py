# expect-result: seccomp
# attack: chown a /tmp file to root
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

p = '/tmp/own-%d' % os.getpid()
open(p, 'w').close()
print('calling', flush=True)
os.chown(p, 0, 0)
if os.stat(p).st_uid == 0:
    print(MARK, 'file now owned by root')
