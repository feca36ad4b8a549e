# expect-result: refused
# attack: seccomp(SECCOMP_GET_ACTION_AVAIL) (syscall 317): the final stage takes seccomp() away
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

action = ctypes.c_uint32(0x7fff0000)  # SECCOMP_RET_ALLOW

print('calling', flush=True)
r, err = sc(317, 2, 0, ctypes.byref(action))
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r == 0:
    print(MARK)
