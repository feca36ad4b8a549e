#pragma once
/* clocks: a run's time namespace (DESIGN §3 step 3). CLOCK_BOOTTIME and CLOCK_MONOTONIC count from the
 * host's boot: read in a run they would tell its uptime (libuv's uv_uptime(), so Node's os.uptime(), falls
 * back to the boot clock without /proc/uptime; Python's time.monotonic()), a side channel on the host and
 * its other tenants. And a prepared run of the warm pool is made before its request: clocks that counted
 * from its making would tell how long the pool sat idle, that is when another tenant was last served.
 * So each run's two clocks start at a random time below CLOCKS_START_SPAN_SEC, to the nanosecond, drawn
 * for that run alone: what a run reads is that time plus its age, and says nothing of either. Not whole
 * seconds: a clock moved by whole seconds keeps the host's fraction, so a run's clock would run in step
 * with the host's to the nanosecond, and its fraction at the first statement would date the pool slot's
 * making (another tenant's request) to the sub-second against CLOCK_REALTIME, which no namespace moves.
 *
 * Writing a time namespace's offsets takes CAP_SYS_TIME, which a host in a container may lack:
 * clocks_probe() finds out once, and runs then have no time namespace (the caller warns). */

#include <stdint.h>

/* 2^24 s, about 194 days: a plausible uptime, far above any age a prepared run reaches (runner/slot.c
 * retires one within minutes), and far below the kernel's bound on a namespace's clocks. */
#define CLOCKS_START_SPAN_SEC (UINT64_C(1) << 24)
#define CLOCKS_NSEC_PER_SEC UINT64_C(1000000000)

/* In the parent: a random start for a run's clocks, in nanoseconds below CLOCKS_START_SPAN_SEC seconds,
 * uniform (the seconds and the nanoseconds drawn apart, each without bias). */
int clocks_random_start(uint64_t *ret_nsec);

/* In the child (no allocation, no logging): moves the calling process (single-threaded, with
 * CAP_SYS_ADMIN and CAP_SYS_TIME) into a new time namespace whose boot and monotonic clocks read
 * start_nsec when it is made. *ret_lag_usec: what the new CLOCK_MONOTONIC lags the old one by, modulo
 * 2^64 (it is "negative" when the run's clock is ahead), to the microsecond: adding it converts. */
int clocks_enter(uint64_t start_nsec, uint64_t *ret_lag_usec);

/* In the parent, once: whether runs can have a time namespace here. Forks a child that makes one as a run
 * would. 0, or a negative errno: -EPERM without CAP_SYS_TIME, -EINVAL for a kernel without time
 * namespaces. */
int clocks_probe(void);
