# expect-result: refused
# options: --network
# attack: with --network, socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP=262): only TCP/UDP may be created
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
libc = ctypes.CDLL(None, use_errno=True)
libc.socket.restype = ctypes.c_int
print('calling', flush=True)
fd = libc.socket(2, 1 | 0o2000000, 262)
print('returned', fd, ctypes.get_errno(), flush=True)
if fd >= 0:
    print(MARK, 'MPTCP socket created')
