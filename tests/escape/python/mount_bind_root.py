# expect-result: seccomp
# attack: bind-mount / onto a directory under /tmp
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
r, err = sc(165, b'/', target.encode(), None, 0x1000, None)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0 and sc(166, target.encode(), 2)[0] == 0 or r == 0:
    print(MARK)
