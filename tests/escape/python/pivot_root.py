# expect-result: seccomp
# attack: pivot_root into a fresh directory under /tmp (not a mount point, so it can only fail)
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

target = '/tmp/mnt-%d' % os.getpid()
os.makedirs(target, exist_ok=True)
os.makedirs(target + '/old', exist_ok=True)

print('calling', flush=True)
r, err = sc(155, target.encode(), (target + '/old').encode())
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0:
    print(MARK)
