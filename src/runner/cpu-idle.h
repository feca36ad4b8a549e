#pragma once
/* cpu-idle: whether the host's CPUs are idle enough for the warm pool's optional work (preparing a run
 * with its preload imports, or replacing a light prepared run with such a one). That work is worth it only
 * on CPU time nothing else wants: under steady load it would be paid for by the runs themselves, and
 * prewarm would cost throughput instead of saving it (issue 25). Pure logic over readings the caller
 * takes (common/cpustat.h), so that it can be tested alone.
 *
 * The verdict covers at least CPU_IDLE_WINDOW_USEC: a reading younger than that keeps the last verdict,
 * so that a busy second is never judged by the quiet instant after it. Idle means at least
 * CPU_IDLE_PERMILLE of every CPU's time went unused, so that one CPU kept busy on a two-CPU host (one
 * client in a closed loop) is not idle. */

#include <stdbool.h>
#include <stdint.h>

#include "common/cpustat.h"

#define CPU_IDLE_WINDOW_USEC (UINT64_C(1000) * 1000)
#define CPU_IDLE_PERMILLE 750

typedef struct CpuIdle {
        CpuTimes last;      /* the reading the current window starts from */
        uint64_t last_usec; /* CLOCK_MONOTONIC of that reading; 0: none yet */
        bool busy; /* the verdict of the last whole window; none yet (a runner that just started, before any
                    * run): not busy, so that the pool fills with preloaded runs at once, as it always did */
} CpuIdle;

/* Takes a reading made at now_usec; returns the verdict. A reading that went backwards (or none that
 * could be made: pass NULL) makes the verdict busy: the optional work waits, nothing else does. */
bool cpu_idle_update(CpuIdle *g, uint64_t now_usec, const CpuTimes *reading);

/* A run started now: busy until a whole window that begins after it says otherwise. Without this, the
 * verdict of a quiet window before a burst (or a window that ends within one, averaging idle time with
 * busy) let the pool preload in the first pauses of steady load: at one client, each request then paid
 * for a third of a preload (issue 25, bench/systemd --run-costs at c=1, 2026-12-05 15:21). */
void cpu_idle_run_started(CpuIdle *g);
