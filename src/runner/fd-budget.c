/* fd-budget: see fd-budget.h. */

#include "fd-budget.h"

#include <errno.h>
#include <sys/resource.h>

#include "pool.h"

uint64_t fd_budget_reserved(const PoolLimits *limits) {
        uint64_t pool = 0;

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                pool += limits->size[l];
        return FD_BUDGET_BASE + (uint64_t) FD_BUDGET_PER_CHILD * (limits->handlers_max + 2 * pool);
}

uint64_t fd_budget_needed(const PoolLimits *limits) {
        return fd_budget_reserved(limits) + FD_BUDGET_CONNECTIONS_MAX;
}

unsigned fd_budget_connections(const PoolLimits *limits, uint64_t nofile) {
        uint64_t reserved = fd_budget_reserved(limits);
        uint64_t room = nofile > reserved ? nofile - reserved : 0;

        if (room < FD_BUDGET_CONNECTIONS_MIN)
                return FD_BUDGET_CONNECTIONS_MIN;
        if (room > FD_BUDGET_CONNECTIONS_MAX)
                return FD_BUDGET_CONNECTIONS_MAX;
        return (unsigned) room;
}

int fd_budget_raise(uint64_t needed, uint64_t *ret_soft, uint64_t *ret_hard) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < needed) {
                rlim_t want =
                        rl.rlim_max == RLIM_INFINITY || rl.rlim_max > needed ? (rlim_t) needed : rl.rlim_max;
                struct rlimit raised = { .rlim_cur = want, .rlim_max = rl.rlim_max };

                if (setrlimit(RLIMIT_NOFILE, &raised) < 0)
                        return -errno;
                rl = raised;
        }
        *ret_soft = rl.rlim_cur;
        *ret_hard = rl.rlim_max;
        return 0;
}
