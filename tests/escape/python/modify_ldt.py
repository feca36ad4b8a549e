# expect-result: refused
# attack: modify_ldt(0, buf, 16) (syscall 154)
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

buf = ctypes.create_string_buffer(16)

print('calling', flush=True)
r, err = sc(154, 0, buf, 16)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r >= 0:
    print(MARK)
