# expect-result: ok
# attack: /dev holds only null, zero and urandom, and they are the real devices, and shm, a link to the run's own /tmp
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import stat
names = set(os.listdir('/dev'))
print('/dev:', sorted(names))
if os.readlink('/dev/shm') != '/tmp':
    print(MARK, '/dev/shm leads elsewhere:', os.readlink('/dev/shm'))
names.discard('shm')
if names - {'null', 'zero', 'urandom'}:
    print(MARK, 'extra device entries:', sorted(names - {'null', 'zero', 'urandom'}))
for name, rdev in (('null', (1, 3)), ('zero', (1, 5)), ('urandom', (1, 9))):
    st = os.stat('/dev/' + name)
    if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != rdev:
        print('unexpected', name, oct(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev))
        sys.exit(3)
