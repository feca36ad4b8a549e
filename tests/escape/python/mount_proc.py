# expect-result: seccomp
# attack: mount procfs on a directory under /tmp (would expose host PIDs without a PID namespace)
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

print('calling', flush=True)
r, err = sc(165, b'proc', target.encode(), b'proc', 0, None)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0 and (print('proc entries:', os.listdir(target)[:10]) or True) and (sc(166, target.encode(), 2) or True):
    print(MARK)
