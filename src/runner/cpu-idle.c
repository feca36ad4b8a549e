/* cpu-idle: see cpu-idle.h. */

#include "cpu-idle.h"

bool cpu_idle_update(CpuIdle *g, uint64_t now_usec, const CpuTimes *reading) {
        int permille;

        if (!reading) {
                g->busy = true;
                return false;
        }
        if (g->last_usec == 0) {
                g->last = *reading;
                g->last_usec = now_usec;
                return !g->busy;
        }
        if (now_usec - g->last_usec < CPU_IDLE_WINDOW_USEC)
                return !g->busy;
        permille = cpustat_idle_permille(&g->last, reading);
        g->busy = permille < CPU_IDLE_PERMILLE; /* -ERANGE (no tick, or backwards) is busy too */
        g->last = *reading;
        g->last_usec = now_usec;
        return !g->busy;
}

void cpu_idle_run_started(CpuIdle *g) {
        g->busy = true;
        g->last_usec = 0; /* the next reading starts a new window */
}
