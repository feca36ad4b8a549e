#pragma once
/* fd-budget: owns the runner's file descriptor arithmetic (issue 24): how many descriptors its configured
 * limits need, how many worker connections fit beside them under RLIMIT_NOFILE, and raising the soft limit
 * toward the need. runner.c applies the result; nobody else sizes the runner's descriptor table.
 *
 * What the runner process itself holds (measured: 17 at rest under `serve` with the default pool):
 *   - a fixed part, FD_BUDGET_BASE: stdio, the event loop (epoll, signalfd, timerfds), the listener or
 *     hand-off socket, the instance claim, the admission directories (twice while a reload swaps them),
 *     the stats, the journal socket, the system bus of a sweep, a socketpair end in flight;
 *   - per child (pool slot or handler), FD_BUDGET_PER_CHILD: its control socket and sd-event's pidfd;
 *     children are at most max_requests handlers plus twice the pool (the retiring slots of a reload or a
 *     package update until they are reaped, and the new ones beside them);
 *   - one per worker connection: at most FD_BUDGET_CONNECTIONS_MAX. */

#include <stdint.h>

typedef struct PoolLimits PoolLimits;

#define FD_BUDGET_BASE 64U
#define FD_BUDGET_PER_CHILD 2U
/* Worker connections at once: one per worker process, whose number the socket unit's MaxConnections= (80
 * shipped) or serve's WORKERS_MAX (1024) bounds; four times the larger leaves room for restarts. */
#define FD_BUDGET_CONNECTIONS_MAX 4096U
/* Whatever the limit, this many are allowed (past the table's size accept() and hand-offs fail with
 * EMFILE, which the runner survives by shedding idle connections). */
#define FD_BUDGET_CONNECTIONS_MIN 16U

/* The descriptors the limits need besides worker connections. */
uint64_t fd_budget_reserved(const PoolLimits *limits);
/* The soft RLIMIT_NOFILE the limits need with FD_BUDGET_CONNECTIONS_MAX connections. */
uint64_t fd_budget_needed(const PoolLimits *limits);
/* How many worker connections fit under nofile (a soft RLIMIT_NOFILE; RLIM_INFINITY for none), between
 * FD_BUDGET_CONNECTIONS_MIN and FD_BUDGET_CONNECTIONS_MAX. */
unsigned fd_budget_connections(const PoolLimits *limits, uint64_t nofile);

/* Raises the soft RLIMIT_NOFILE to needed, or to the hard limit if that is lower; never lowers it and never
 * touches the hard limit (the unit's LimitNOFILE=, or the operator's ulimit, stays the bound). Returns 0
 * with the soft and hard limits now in force, or a negative errno. Non-logging. */
int fd_budget_raise(uint64_t needed, uint64_t *ret_soft, uint64_t *ret_hard);
