/* languages: see languages.h. */

#include "languages.h"

#include <errno.h>

#include "common/config.h"
#include "common/log.h"
#include "runtime/runtime.h"
#include "sandbox/run.h"

_Static_assert(RUNTIME_READY_FD == RUN_READY_FD, "the bootstrap closes the fd the child places");

int languages_sandbox_new(const Config *cfg, Sandbox **ret, RunFailure *reterr) {
        RunLanguage languages[_LANGUAGE_MAX];

        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const Runtime *rt = runtime_get(l);

                languages[l] = (RunLanguage){
                        .name = rt->name,
                        .interpreter = runtime_interpreter(rt, cfg),
                        .argv_tail = rt->argv_tail,
                        .network_argv_tail = rt->network_argv_tail,
                        .environment = rt->environment,
                        .preload_variable = RUNTIME_PRELOAD_VARIABLE,
                        .preload = runtime_pool_preload(rt, cfg),
                        .rules = rt->rules,
                        .n_rules = rt->n_rules,
                };
        }
        int r = sandbox_new(cfg, languages, _LANGUAGE_MAX, ret, reterr);
        if (r < 0)
                return r;
        /* Degraded, not refused: failing every run would help nobody (docs/security.md). */
        r = sandbox_time_namespace(*ret);
        if (r < 0)
                log_warning_errno(
                        r,
                        "Runs get no time namespace, so their boot and monotonic clocks are the "
                        "host's and tell its uptime: setting a time namespace's clocks failed (%m)%s",
                        r == -EPERM ? "; CAP_SYS_TIME is missing, as in a container that drops it" : "");
        return 0;
}
