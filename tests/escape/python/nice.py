# expect-result: error
# attack: raise the priority: os.setpriority(PRIO_PROCESS, 0, -20) (setpriority is allowed for os.nice(); only CAP_SYS_NICE lowers niceness)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.setpriority(os.PRIO_PROCESS, 0, -20)
if os.getpriority(os.PRIO_PROCESS, 0) < 0:
    print(MARK, 'priority raised')
