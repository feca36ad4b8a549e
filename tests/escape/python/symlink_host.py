# expect-result: ok|seccomp
# attack: symlinks in /tmp to /etc/shadow and host paths, then read through them
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

# (/proc/1/root is the run's own root: proc_sys.py checks it)
targets = ['/etc/shadow', '/root', '/home', '/var/lib/difysandbox', '/run/difysandbox',
           '/work', '/etc/difysandbox']
for i, t in enumerate(targets):
    link = '/tmp/link-%d-%d' % (os.getpid(), i)
    try:
        print('calling', flush=True)
        os.symlink(t, link)
    except OSError as e:
        print('symlink', t, 'failed', e)
        continue
    try:
        if os.path.isdir(link):
            print(MARK, 'listed', t, os.listdir(link)[:5])
        else:
            with open(link, 'rb') as f:
                data = f.read(64)
            print(MARK, 'read', t, len(data), 'bytes')
    except OSError as e:
        print('read through', t, 'failed', e)
