# expect-result: seccomp
# attack: syslog(SYSLOG_ACTION_READ_ALL) (syscall 103): read the kernel log
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

buf = ctypes.create_string_buffer(4096)

print('calling', flush=True)
r, err = sc(103, 3, buf, 4096)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r > 0:
    print(MARK)
