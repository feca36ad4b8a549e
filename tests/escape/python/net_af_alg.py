# expect-result: refused
# options: --network
# attack: with --network, socket(AF_ALG=38) must be killed (only AF_INET/AF_INET6 allowed)
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

libc.socket.restype = ctypes.c_int
print('calling', flush=True)
fd = libc.socket(38, 2, 0)
print('returned', fd, ctypes.get_errno(), flush=True)
if fd >= 0:
    print(MARK, 'AF_ALG socket created')
