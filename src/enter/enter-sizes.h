#pragma once
/* enter-sizes: the sizes a run asks of the system, answered with the run's own limits (DESIGN §3.5). glibc's
 * sysconf(_SC_PHYS_PAGES) asks sysinfo(2), which the filter refuses (it shows the host's uptime, load and
 * process count), and does not check the refusal: it returned whatever was on the stack, a different wrong
 * size each run, and libraries that size themselves by memory were silently wrong. The enter library
 * defines sysconf(), get_phys_pages(), get_avphys_pages() and sysinfo() over glibc's, so every caller
 * through the dynamic linker gets the run's memory limit instead. */

#include <stdint.h>

/* The run's memory limit and /tmp size in bytes, from the EnterConfig; 0 leaves glibc's answers alone.
 * statvfs() of the run's own /tmp (and /dev/shm, a link to it) is answered with its size too: the filter
 * refuses statfs(2), which for "/" would show the host's disk, and multiprocessing's shared memory asks
 * statvfs("/dev/shm") before it allocates. Every other path keeps glibc's answer (ENOSYS). */
void enter_sizes_set(uint64_t memory_max, uint64_t tmp_size);
