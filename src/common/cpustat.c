/* cpustat: see cpustat.h. */

#include "cpustat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "parse.h"

/* /proc/stat is a few KiB even with hundreds of CPUs; its first line is all that is read. */
#define PROC_STAT_MAX (1U << 20)
/* user nice system idle iowait irq softirq steal: the fields that add up to the time that passed (guest
 * time, the two after them, is already counted in user and nice). */
#define CPU_FIELDS 8U

int cpustat_parse(const char *text, CpuTimes *ret) {
        uint64_t v[CPU_FIELDS];
        const char *p;

        if (strncmp(text, "cpu ", 4) != 0)
                return -EBADMSG;
        p = text + 4;
        for (unsigned i = 0; i < CPU_FIELDS; i++) {
                char word[24];
                size_t n;

                p += strspn(p, " ");
                n = strcspn(p, " \n");
                if (n == 0 || n >= sizeof(word))
                        return -EBADMSG;
                memcpy(word, p, n);
                word[n] = '\0';
                if (parse_uint64(word, &v[i]) < 0)
                        return -EBADMSG;
                p += n;
        }
        *ret = (CpuTimes){ .idle = v[3] + v[4] };
        for (unsigned i = 0; i < CPU_FIELDS; i++)
                ret->total += v[i];
        return 0;
}

int cpustat_read(CpuTimes *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        r = read_full_file("/proc/stat", PROC_STAT_MAX, &text, &len);
        if (r < 0)
                return r;
        return cpustat_parse(text, ret);
}

int cpustat_idle_permille(const CpuTimes *before, const CpuTimes *after) {
        uint64_t total, idle;

        if (after->total <= before->total || after->idle < before->idle)
                return -ERANGE;
        total = after->total - before->total;
        idle = after->idle - before->idle;
        return idle >= total ? 1000 : (int) (idle * 1000 / total);
}
