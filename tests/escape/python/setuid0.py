# expect-result: seccomp
# attack: os.setuid(0)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.setuid(0)
if os.getuid() == 0:
    print(MARK, 'uid 0')
