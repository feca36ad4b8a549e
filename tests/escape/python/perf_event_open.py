# expect-result: seccomp
# attack: perf_event_open (syscall 298) of a software clock counter
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

attr = (ctypes.c_uint32 * 32)()
attr[0] = 1             # PERF_TYPE_SOFTWARE
attr[1] = 128           # size

print('calling', flush=True)
r, err = sc(298, ctypes.byref(attr), 0, -1, -1, 0)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r >= 0:
    print(MARK)
