# expect-result: seccomp
# attack: process_vm_readv (syscall 310) of a buffer of PID 1
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

src = ctypes.create_string_buffer(b'secret' * 8)
dst = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
liov = iovec(ctypes.addressof(dst), 48)
riov = iovec(ctypes.addressof(src), 48)

print('calling', flush=True)
r, err = sc(310, os.getpid(), ctypes.byref(liov), 1, ctypes.byref(riov), 1, 0)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r > 0:
    print(MARK)
