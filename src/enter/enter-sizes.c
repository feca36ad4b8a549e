/* enter-sizes: see enter-sizes.h. Preloaded, so these definitions come before glibc's for every caller that
 * goes through the dynamic linker (Python's os.sysconf, libuv's os.totalmem, numpy, OpenBLAS). No
 * allocation, no locks: the limit is set once, before main(). */

#include "enter-sizes.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* glibc's own sysconf, exported under this name, for everything but the memory sizes. */
extern long __sysconf(int name);

static uint64_t run_memory_max, run_tmp_size;

void enter_sizes_set(uint64_t memory_max, uint64_t tmp_size) {
        run_memory_max = memory_max;
        run_tmp_size = tmp_size;
}

/* The run's /tmp, by the paths that name it. What is used of it is not known without statfs: the size is
 * reported free, which the tmpfs's own cap enforces. */
static bool is_run_tmp(const char *path) {
        return strcmp(path, "/tmp") == 0 || strcmp(path, "/tmp/") == 0 || strcmp(path, "/dev/shm") == 0 ||
               strcmp(path, "/dev/shm/") == 0;
}

int statvfs(const char *path, struct statvfs *buf) {
        if (run_tmp_size == 0 || !is_run_tmp(path)) {
                errno = ENOSYS; /* what the filter answers statfs(2) with */
                return -1;
        }
        memset(buf, 0, sizeof(*buf));
        buf->f_bsize = buf->f_frsize = 4096;
        buf->f_blocks = buf->f_bfree = buf->f_bavail = run_tmp_size / 4096;
        buf->f_files = buf->f_ffree = buf->f_favail = 16384; /* nr_inodes of run.c's tmpfs */
        buf->f_namemax = 255;
        buf->f_flag = ST_NOSUID | ST_NODEV | ST_NOEXEC;
        return 0;
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
