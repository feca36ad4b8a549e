# expect-result: ok
# options: --network
# attack: with --network, socket(AF_UNIX) must still fail (EACCES): abstract sockets of the host
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
made = [t for t in (1, 2, 5) if libc.socket(1, t, 0) >= 0]
print('made', made, 'errno', ctypes.get_errno())
if made:
    print(MARK, 'AF_UNIX sockets with network:', made)
