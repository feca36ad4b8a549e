# expect-result: refused
# attack: sched_setscheduler(0, SCHED_FIFO, 99): a real-time spinner could starve the host
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
r, err = sc(144, 0, 1, ctypes.byref(ctypes.c_int(99)))
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0 and (sc(144, 0, 0, ctypes.byref(ctypes.c_int(0))) or True):
    print(MARK)
