# expect-result: seccomp
# attack: os.system: glibc system() forks /bin/sh (a return other than -1 means a child was made)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
rc = os.system(sys.executable + ' -I -c "print(chr(68)+\'IFYSANDBOX-ESCAPED\')"')
print('os.system returned', rc, flush=True)
if rc != -1:
    print(MARK, 'system() created a child')
