# expect-result: ok|seccomp
# attack: socketpair() for every family but AF_UNIX (TIPC and others would load kernel code)
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

libc.socketpair.restype = ctypes.c_int
made = []
print('calling', flush=True)
for fam in range(0, 46):
    if fam == 1:
        continue
    for typ in (1, 2, 5):
        sv = (ctypes.c_int * 2)(-1, -1)
        if libc.socketpair(fam, typ, 0, sv) == 0:
            made.append((fam, typ))
            os.close(sv[0]); os.close(sv[1])
print('made', made)
if made:
    print(MARK, 'socketpairs of other families:', made)
