/* rlimits: see rlimits.h. */

#include "rlimits.h"

#include <errno.h>
#include <sys/resource.h>

#include "child.h"

int rlimits_apply(const RunPlan *plan) {
        const struct {
                int resource;
                rlim_t value;
        } limits[] = {
                { RLIMIT_CPU, plan->cpu_seconds },
                { RLIMIT_NOFILE, plan->open_files },
                { RLIMIT_NPROC, plan->tasks },
                { RLIMIT_FSIZE, plan->file_size },
                { RLIMIT_CORE, 0 },
                { RLIMIT_MSGQUEUE, 0 },
        };

        for (unsigned i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
                struct rlimit rl = { .rlim_cur = limits[i].value, .rlim_max = limits[i].value };
                if (setrlimit(limits[i].resource, &rl) < 0)
                        return -errno;
        }
        return 0;
}
