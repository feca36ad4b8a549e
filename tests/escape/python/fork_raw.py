# expect-result: refused
# attack: fork via raw syscall 57 through ctypes
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
r, err = sc(57)
if r == 0:
    os._exit(0)
print('returned', r, err, flush=True)
if r > 0:
    print(MARK, 'raw fork created pid', r)
