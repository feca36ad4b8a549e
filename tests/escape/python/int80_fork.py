# expect-result: seccomp
# host-probe: int80
# attack: i386 int 0x80 fork (eax=2); the child exits at once
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

fn = machine_code('b802000000cd804863c0c3')  # mov eax,2; int 0x80; movsxd rax,eax; ret
print('calling', flush=True)
r = fn()
if r == 0:
    os._exit(0)
print(MARK, 'int 0x80 fork returned', r)
