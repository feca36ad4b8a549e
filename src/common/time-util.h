#pragma once
/* time-util: times in microseconds (usec_t) and the clocks, as systemd's time-util.h has them. A plain
 * helper: anyone may include it, and it includes nothing of ours. Header-only, so the enter library (which
 * links nothing of ours) and the child after clone() (no malloc, no locks) can use it too: clock_gettime()
 * of CLOCK_MONOTONIC goes through the vDSO, so no seccomp stage sees it. */

#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;

#define USEC_INFINITY ((usec_t) UINT64_MAX)

#define NSEC_PER_USEC ((uint64_t) UINT64_C(1000))
#define USEC_PER_MSEC ((usec_t) UINT64_C(1000))
#define USEC_PER_SEC ((usec_t) UINT64_C(1000000))
#define USEC_PER_MINUTE ((usec_t) (UINT64_C(60) * USEC_PER_SEC))
#define USEC_PER_HOUR ((usec_t) (UINT64_C(60) * USEC_PER_MINUTE))

/* A timespec as microseconds, rounded down; a negative one (before the epoch) is 0. */
static inline usec_t timespec_load(const struct timespec *ts) {
        if (ts->tv_sec < 0 || ts->tv_nsec < 0)
                return 0;
        return (usec_t) ts->tv_sec * USEC_PER_SEC + (usec_t) ts->tv_nsec / NSEC_PER_USEC;
}

/* Microseconds as a timespec, for nanosleep(), timer_settime() and the like. */
static inline struct timespec timespec_store(usec_t u) {
        return (struct timespec){ .tv_sec = (time_t) (u / USEC_PER_SEC),
                                  .tv_nsec = (long) (u % USEC_PER_SEC * NSEC_PER_USEC) };
}

/* The clock's time in microseconds: CLOCK_MONOTONIC for deadlines and durations, CLOCK_REALTIME for
 * timestamps shown to people. clock_gettime() cannot fail for these clocks. */
static inline usec_t now(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return timespec_load(&ts);
}

/* Microseconds as poll()'s timeout in milliseconds, rounded up so a deadline is never woken early;
 * USEC_INFINITY is -1 (no timeout), and a value too large for an int is INT32_MAX. */
static inline int usec_to_poll_timeout(usec_t u) {
        if (u == USEC_INFINITY)
                return -1;
        u = u / USEC_PER_MSEC + (u % USEC_PER_MSEC != 0); /* no overflow near USEC_INFINITY */
        return u > INT32_MAX ? INT32_MAX : (int) u;
}
