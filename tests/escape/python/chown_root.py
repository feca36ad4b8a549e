# expect-result: error
# attack: chown a /tmp file to root (chown is allowed: without CAP_CHOWN the kernel refuses any owner but the run's own)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

p = '/tmp/own-%d' % os.getpid()
open(p, 'w').close()
print('calling', flush=True)
os.chown(p, 0, 0)
if os.stat(p).st_uid == 0:
    print(MARK, 'file now owned by root')
