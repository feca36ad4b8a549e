# expect-result: seccomp
# attack: ptrace(PTRACE_ATTACH, 1) and PTRACE_SEIZE, only when PID 1 is the run itself
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sc(nr, *args):
    """Raw syscall; ints are passed as full 64-bit longs."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *conv)
    return r, ctypes.get_errno()

if os.getpid() != 1:
    print('refused: PID 1 is not this run, attaching to it could stop a host process')
    sys.exit(0)

print('calling', flush=True)
r, err = sc(101, 16, 1, 0, 0)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0 or sc(101, 0x4206, 1, 0, 0)[0] == 0:
    print(MARK)
