# expect-result: refused
# options: --network
# attack: with --network, socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE=136): only TCP/UDP may be created
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
libc = ctypes.CDLL(None, use_errno=True)
libc.socket.restype = ctypes.c_int
print('calling', flush=True)
fd = libc.socket(10, 2 | 0o4000, 136)
print('returned', fd, ctypes.get_errno(), flush=True)
if fd >= 0:
    print(MARK, 'UDP-Lite socket created')
