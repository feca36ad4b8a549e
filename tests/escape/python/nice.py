# expect-result: seccomp
# attack: raise the priority: os.setpriority(PRIO_PROCESS, 0, -20)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.setpriority(os.PRIO_PROCESS, 0, -20)
if os.getpriority(os.PRIO_PROCESS, 0) < 0:
    print(MARK, 'priority raised')
