# expect-result: ok
# attack: climb above / through ".." path components and list what is there
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

# (not proc: the run has a /proc of its own, of its own processes only; proc_sys.py checks it)
HOST_ONLY = {'sys', 'root', 'home', 'var', 'boot', 'run', 'work', 'srv', 'opt', 'mnt', 'media', 'lost+found', 'snap'}
root = os.stat('/')
for path in ('/..', '/../../..', '/tmp/../../../..', '/usr/lib/../../../../..', '/dev/../..'):
    names = set(os.listdir(path))
    print(path, '->', sorted(names))
    if names & HOST_ONLY:
        print(MARK, 'host directories visible through', path, sorted(names & HOST_ONLY))
    st = os.stat(path)
    if (st.st_dev, st.st_ino) != (root.st_dev, root.st_ino):
        print(MARK, path, 'is not /')
