# expect-result: refused|error
# attack: fileless exec: memfd_create is allowed (anonymous memory, counted in the run's limit), but executing it must fail: execveat and fexecve are refused
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

fd = os.memfd_create('x')
with open(sys.executable, 'rb') as f:
    os.write(fd, f.read())
print('calling', flush=True)
try:
    os.execve(fd, [sys.executable, '-c', 'print(chr(68)+"IFYSANDBOX-ESCAPED", "fexecve ran")'], {})
except OSError as e:
    print('fexecve refused:', e, flush=True)
    sys.exit(1)
print(MARK, 'fexecve returned')
