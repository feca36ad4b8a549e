# expect-result: ok
# attack: a mode-000 file and directory of the run stay unreadable (no CAP_DAC_OVERRIDE/READ_SEARCH)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

p = '/tmp/secret-%d' % os.getpid()
with open(p, 'w') as f:
    f.write('x')
os.chmod(p, 0)
try:
    open(p).read()
    print(MARK, 'read a mode-000 file')
except PermissionError as e:
    print('file denied:', e)
d = '/tmp/secretdir-%d' % os.getpid()
os.mkdir(d)
os.chmod(d, 0)
try:
    os.listdir(d)
    print(MARK, 'listed a mode-000 directory')
except PermissionError as e:
    print('dir denied:', e)
