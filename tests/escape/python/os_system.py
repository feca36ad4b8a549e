# expect-result: refused|ok
# attack: os.system: glibc's system() spawns /bin/sh; creating the process must fail (EPERM), so the command never runs (glibc then returns the shell's 127 exit status)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

flag = '/tmp/system-ran-%d' % os.getpid()
print('calling', flush=True)
rc = os.system('echo > ' + flag)
print('os.system returned', rc, flush=True)
if os.path.exists(flag):
    print(MARK, 'system() ran a command')
