# expect-result: ok
# attack: io_uring_setup (syscall 425) with 8 entries: the filter answers ENOSYS (libuv probes it), never the kernel
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

params = (ctypes.c_uint8 * 120)()

r, err = sc(425, 8, ctypes.byref(params))
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r >= 0 or err != 38:
    print(MARK)  # a ring, or an answer from the kernel (EFAULT, EPERM of a sysctl) instead of the filter's
