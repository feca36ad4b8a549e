# expect-result: seccomp
# attack: open_by_handle_at (syscall 304) with the root inode handle (the "shocker" escape)
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

handle = (ctypes.c_uint32 * 4)(8, 1, 2, 0)  # handle_bytes 8, type FILEID_INO32_GEN, inode 2, generation 0

print('calling', flush=True)
r, err = sc(304, os.open('/', os.O_RDONLY), ctypes.byref(handle), 0)
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r >= 0:
    print(MARK)
