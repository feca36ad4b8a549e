#pragma once
/* cpustat: how busy the host's CPUs were between two readings of /proc/stat's "cpu" line (every CPU
 * together, in clock ticks). The warm pool asks it before it replaces a prepared run that is still good
 * (runner.c): such work must only take CPU time that nothing else wants. Non-logging. */

#include <stdint.h>

typedef struct CpuTimes {
        uint64_t total; /* user + nice + system + idle + iowait + irq + softirq + steal */
        uint64_t idle;  /* idle + iowait */
} CpuTimes;

/* The "cpu " line of /proc/stat's text: -EBADMSG when it is missing or malformed. */
int cpustat_parse(const char *text, CpuTimes *ret);
int cpustat_read(CpuTimes *ret);

/* The idle share of [before, after] in per mille (0..1000); -ERANGE when no tick passed between them. */
int cpustat_idle_permille(const CpuTimes *before, const CpuTimes *after);
