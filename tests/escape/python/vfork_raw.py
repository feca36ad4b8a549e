# expect-result: refused
# attack: vfork (syscall 58) from machine code; the child exits at once with exit(0)
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

import mmap


def machine_code(hexcode):
    """Puts x86-64 machine code into an anonymous RWX page and returns it as a C function -> long."""
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes.fromhex(hexcode))
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    fn = ctypes.CFUNCTYPE(ctypes.c_long)(addr)
    fn.page = page  # keep the mapping alive
    return fn

# mov eax,58; syscall; test eax,eax; jnz parent; mov eax,60; xor edi,edi; syscall; parent: movsxd rax,eax; ret
vfork = machine_code('b83a0000000f0585c07509b83c00000031ff0f054863c0c3')
print('calling', flush=True)
r = vfork()
print('returned', r, flush=True)
if r > 0:
    print(MARK, 'vfork created pid', r)
