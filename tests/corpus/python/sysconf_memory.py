# os.sysconf: physical memory and CPUs, which libraries size their caches and pools by, must be sane.
import os

page = os.sysconf('SC_PAGE_SIZE')
phys = os.sysconf('SC_PHYS_PAGES')
again = os.sysconf('SC_PHYS_PAGES')
assert page in (4096, 16384, 65536), page
assert phys > 0 and phys == again, (phys, again)
avail = os.sysconf('SC_AVPHYS_PAGES')
assert 0 < avail <= phys, (avail, phys)
assert os.sysconf('SC_NPROCESSORS_ONLN') >= 1
# The harness checks this line against the run's memory limit and the host's RAM.
print(f'phys_bytes {phys * page}')
print('CORPUS-OK sysconf_memory')
