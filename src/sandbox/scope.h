#pragma once
/* scope: owns the transient systemd scopes of runs (DESIGN §3.4, where systemd is PID 1). A run's
 * processes are put into difysandbox-run-<id>.scope in difysandbox-runs.slice through sd-bus
 * StartTransientUnit, with MemoryMax, MemorySwapMax=0, CPUQuota and TasksMax, and the caller waits
 * until systemd has finished the job: only then may the child go on to user code. systemd removes the
 * scope when its last process exits. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct CgroupLimits CgroupLimits;
typedef struct ScopeManager ScopeManager;

/* Connects to the system bus. -ENOMEDIUM when systemd is not PID 1 (use cgroup.h instead). */
int scope_manager_open(ScopeManager **ret);
ScopeManager *scope_manager_free(ScopeManager *m);

/* Puts pid into a new scope named unit ("difysandbox-run-<id>.scope") in slice, with limits; returns
 * once systemd reports the job done. description names the instance (instance.h) that made it, so that
 * `systemctl status` tells neighbours' runs apart (the run id in the name is random, so names never
 * collide). On failure the job's result is in the error: -EIO for a job that did not end "done",
 * -ETIMEDOUT after timeout_usec. When systemd refuses StartTransientUnit, *reterr_detail is
 * "<unit>: <systemd's message>", malloc()ed (NULL if even that failed); otherwise it is left alone. */
int scope_start(ScopeManager *m, const char *unit, const char *description, const char *slice, pid_t pid,
                const CgroupLimits *limits, uint64_t timeout_usec, char **reterr_detail);
