# expect-result: refused
# attack: raw execveat (syscall 322) of the interpreter with a program that prints the marker
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

exe = sys.executable.encode()
argv = (ctypes.c_char_p * 5)(exe, b'-I', b'-c', b"print('DIFYSANDBOX-' + 'ESCAPED', 'from execveat')", None)
envp = (ctypes.c_char_p * 1)(None)
print('calling', flush=True)
r, err = sc(322, -100, ctypes.c_char_p(exe), argv, envp, 0)
print('returned', r, err)
