# expect-result: refused
# attack: os.fork(): a second process in the run (fork is forbidden by seccomp)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
pid = os.fork()
if pid == 0:
    os._exit(0)
print(MARK, 'fork returned child pid', pid)
