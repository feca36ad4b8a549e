# expect-result: ok
# attack: socket() for every address family 0..45 and type STREAM/DGRAM/RAW/SEQPACKET without network
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
opened, errnos = [], {}
for fam in range(0, 46):
    for typ in (1, 2, 3, 5):
        ctypes.set_errno(0)
        fd = libc.socket(fam, typ, 0)
        if fd >= 0:
            opened.append((fam, typ))
            os.close(fd)
        else:
            errnos[ctypes.get_errno()] = errnos.get(ctypes.get_errno(), 0) + 1
print('errnos', errnos, 'opened', opened)
if opened:
    print(MARK, 'sockets created without network:', opened)
