# expect-result: seccomp
# attack: raw setfsuid(0) (syscall 122); effect checked with a second call that returns the fsuid
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

print('calling', flush=True)
r, err = sc(122, 0)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if sc(122, -1)[0] == 0:
    print(MARK)
