# expect-result: ok
# attack: fd-relative openat("..") chains from /tmp and from /dev to leave the root
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

# (not proc: the run has a /proc of its own, of its own processes only; proc_sys.py checks it)
HOST_ONLY = {'sys', 'root', 'home', 'var', 'boot', 'run', 'work', 'srv', 'opt', 'mnt', 'media', 'lost+found', 'snap'}
for start in ('/tmp', '/dev', '/usr/lib'):
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY)
    for i in range(64):
        nfd = os.open('..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    names = set(os.listdir(fd))
    st = os.fstat(fd)
    os.close(fd)
    print(start, '->', sorted(names))
    if names & HOST_ONLY:
        print(MARK, 'host directories visible from', start, sorted(names & HOST_ONLY))
    root = os.stat('/')
    if (st.st_dev, st.st_ino) != (root.st_dev, root.st_ino):
        print(MARK, 'openat("..") from', start, 'ends above /')
