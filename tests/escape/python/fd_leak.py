# expect-result: ok
# attack: no file descriptor of the host or the sandbox machinery is inherited: only 0, 1, 2 are open
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import stat
leaked = []
for fd in range(3, 1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    leaked.append((fd, stat.filemode(st.st_mode), st.st_dev, st.st_ino))
print('open fds beyond stdio:', leaked)
if leaked:
    print(MARK, 'inherited fds:', leaked)
st0 = os.fstat(0)
if not stat.S_ISCHR(st0.st_mode):
    print('stdin is not /dev/null:', stat.filemode(st0.st_mode))
    sys.exit(3)
