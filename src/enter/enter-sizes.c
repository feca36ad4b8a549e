/* enter-sizes: see enter-sizes.h. Preloaded, so these definitions come before glibc's for every caller that
 * goes through the dynamic linker (Python's os.sysconf, libuv's os.totalmem, numpy, OpenBLAS). No
 * allocation, no locks: the limit is set once, before main(). */

#include "enter-sizes.h"

#include <errno.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* glibc's own sysconf, exported under this name, for everything but the memory sizes. */
extern long __sysconf(int name);

static uint64_t run_memory_max;

void enter_sizes_set(uint64_t memory_max) {
        run_memory_max = memory_max;
}

static long page_size(void) {
        long size = __sysconf(_SC_PAGESIZE);
        return size > 0 ? size : 4096;
}

long get_phys_pages(void) {
        if (run_memory_max == 0)
                return -1; /* no limit was handed over: an error, never a guess */
        return (long) (run_memory_max / (uint64_t) page_size());
}

/* What the run may still allocate is bounded by the same limit; what it already uses is not known without
 * its cgroup: the limit is the answer that never overstates. */
long get_avphys_pages(void) {
        return get_phys_pages();
}

long sysconf(int name) {
        if (name == _SC_PHYS_PAGES)
                return get_phys_pages();
        if (name == _SC_AVPHYS_PAGES)
                return get_avphys_pages();
        return __sysconf(name);
}

/* The run's view: its clock since its boot (its time namespace), its memory limit, itself as the only
 * process; no load, no swap (MemorySwapMax=0). */
int sysinfo(struct sysinfo *info) {
        struct timespec ts;

        if (run_memory_max == 0) {
                errno = ENOSYS;
                return -1;
        }
        memset(info, 0, sizeof(*info));
        if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
                info->uptime = ts.tv_sec;
        info->totalram = (unsigned long) run_memory_max;
        info->freeram = (unsigned long) run_memory_max;
        info->procs = 1;
        info->mem_unit = 1;
        return 0;
}
