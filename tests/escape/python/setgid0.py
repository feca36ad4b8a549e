# expect-result: seccomp
# attack: os.setgid(0)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.setgid(0)
if os.getgid() == 0:
    print(MARK, 'gid 0')
