# expect-result: seccomp
# attack: os.setgroups([0]) to join the root group
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.setgroups([0])
print(MARK, 'setgroups succeeded')
