# expect-result: ok|seccomp
# attack: hard link /etc/passwd into /tmp (a link across mounts would expose the host inode)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

link = '/tmp/hl-%d' % os.getpid()
try:
    print('calling', flush=True)
    os.link('/etc/passwd', link)
    print(MARK, 'hard link created')
except OSError as e:
    print('denied', e)
