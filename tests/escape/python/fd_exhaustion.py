# expect-result: ok
# attack: open /dev/null up to 100000 times: EMFILE at RLIMIT_NOFILE (256)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

fds, err = [], None
try:
    for i in range(100000):
        fds.append(os.open('/dev/null', os.O_RDONLY))
except OSError as e:
    err = e
print('opened', len(fds), 'stopped by', err)
if len(fds) > 256:
    print(MARK, len(fds), 'fds open')
