# expect-result: ok
# attack: clone3 (syscall 435) with a fork-like struct must fail with ENOSYS, never create a process
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

# struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls (8 x u64)
args = (ctypes.c_uint64 * 11)()
args[4] = 17  # exit_signal = SIGCHLD
r, err = sc(435, ctypes.byref(args), ctypes.sizeof(args))
if r == 0:
    os._exit(0)
print('returned', r, 'errno', err, flush=True)
if r > 0:
    print(MARK, 'clone3 created pid', r)
if err != 38:
    print('clone3 did not fail with ENOSYS', file=sys.stderr)
    sys.exit(2)
