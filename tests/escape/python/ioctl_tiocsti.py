# expect-result: refused
# attack: ioctl(TIOCSTI) on fd 0 and fd 1 (terminal input injection)
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
r, err = sc(16, 0, 0x5412, ctypes.c_char_p(b'x'))
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0 or sc(16, 1, 0x5412, ctypes.c_char_p(b'x'))[0] == 0:
    print(MARK)
