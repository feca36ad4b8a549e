# expect-result: seccomp
# attack: bpf(BPF_MAP_CREATE) with an array map (syscall 321)
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

attr = (ctypes.c_uint32 * 32)()
attr[0], attr[1], attr[2], attr[3] = 2, 4, 4, 1  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry

print('calling', flush=True)
r, err = sc(321, 0, ctypes.byref(attr), ctypes.sizeof(attr))
print('returned', r, 'errno', err, os.strerror(err) if err else '', flush=True)
if r >= 0:
    print(MARK)
