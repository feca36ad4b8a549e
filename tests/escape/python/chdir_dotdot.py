# expect-result: ok|seccomp
# attack: chdir("..") 64 times from /tmp and list the directory reached
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

# (not proc: the run has a /proc of its own, of its own processes only; proc_sys.py checks it)
HOST_ONLY = {'sys', 'root', 'home', 'var', 'boot', 'run', 'work', 'srv', 'opt', 'mnt', 'media', 'lost+found', 'snap'}
print('calling', flush=True)
os.chdir('/tmp')
for i in range(64):
    os.chdir('..')
names = set(os.listdir('.'))
print('top:', sorted(names))
if names & HOST_ONLY:
    print(MARK, 'host directories visible:', sorted(names & HOST_ONLY))
