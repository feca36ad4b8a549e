# expect-result: ok
# attack: sysinfo(2) reads the host's uptime, load and process count (a side channel on other tenants): the raw call is refused, and glibc's sysinfo() and sysconf() answer the run's own figures (enter-sizes.c)
import ctypes, os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class SysInfo(ctypes.Structure):
    _fields_ = [('uptime', ctypes.c_long), ('loads', ctypes.c_ulong * 3), ('totalram', ctypes.c_ulong),
                ('freeram', ctypes.c_ulong), ('sharedram', ctypes.c_ulong), ('bufferram', ctypes.c_ulong),
                ('totalswap', ctypes.c_ulong), ('freeswap', ctypes.c_ulong), ('procs', ctypes.c_ushort),
                ('pad', ctypes.c_ushort), ('totalhigh', ctypes.c_ulong), ('freehigh', ctypes.c_ulong),
                ('mem_unit', ctypes.c_uint), ('_f', ctypes.c_char * 8)]


info = SysInfo()
r = libc.syscall(ctypes.c_long(99), ctypes.byref(info))  # SYS_sysinfo on x86-64
print('raw sysinfo', r, os.strerror(ctypes.get_errno()))
if r == 0:
    print(MARK, 'the raw call answered: host uptime', info.uptime, 'processes', info.procs)
info = SysInfo()
r = libc.sysinfo(ctypes.byref(info))
print('sysinfo()', r, 'procs', info.procs, 'loads', list(info.loads), 'totalram', info.totalram * info.mem_unit)
if r == 0 and (info.procs > 1 or any(info.loads) or info.totalswap):
    print(MARK, 'host figures: processes', info.procs, 'loads', list(info.loads))
pages = os.sysconf('SC_PHYS_PAGES')
if r == 0 and pages * os.sysconf('SC_PAGE_SIZE') != info.totalram * info.mem_unit:
    print('sysconf and sysinfo disagree', pages, info.totalram)
    sys.exit(3)
