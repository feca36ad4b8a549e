# expect-result: ok
# attack: sysinfo(2) reads the host's uptime, load and process count (a side channel on other tenants)
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
libc = ctypes.CDLL(None, use_errno=True)


class SysInfo(ctypes.Structure):
    _fields_ = [('uptime', ctypes.c_long), ('loads', ctypes.c_ulong * 3), ('totalram', ctypes.c_ulong),
                ('freeram', ctypes.c_ulong), ('sharedram', ctypes.c_ulong), ('bufferram', ctypes.c_ulong),
                ('totalswap', ctypes.c_ulong), ('freeswap', ctypes.c_ulong), ('procs', ctypes.c_ushort),
                ('pad', ctypes.c_ushort), ('totalhigh', ctypes.c_ulong), ('freehigh', ctypes.c_ulong),
                ('mem_unit', ctypes.c_uint), ('_f', ctypes.c_char * 8)]


info = SysInfo()
r = libc.sysinfo(ctypes.byref(info))
print('sysinfo', r, os.strerror(ctypes.get_errno()))
if r == 0:
    print(MARK, 'host uptime', info.uptime, 'processes', info.procs)
