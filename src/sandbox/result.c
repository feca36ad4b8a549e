/* result: see result.h. */

#include "result.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/cleanup.h"

static const char *const result_lines[_RUN_RESULT_MAX] = {
        [RUN_RESULT_TIMEOUT] = "error: timeout",
        [RUN_RESULT_MEMORY] = "error: memory limit exceeded",
        [RUN_RESULT_SECCOMP] = "error: operation not permitted",
        [RUN_RESULT_OUTPUT_TRUNCATED] = "error: output limit exceeded",
};

RunResult result_classify(const RunFacts *f) {
        /* What the sandbox did to the run comes first: a run we killed died of SIGKILL, which says
         * nothing by itself. */
        if (f->timed_out)
                return RUN_RESULT_TIMEOUT;
        if (f->seccomp_killed)
                return RUN_RESULT_SECCOMP;
        if (f->output_truncated)
                return RUN_RESULT_OUTPUT_TRUNCATED;
        /* Evidence before inference: the cgroup's count of OOM kills is a fact, while cpu_limit_hit is
         * read from the CPU time used, which a run reclaiming memory at its limit also burns. */
        if (f->oom_kills > 0)
                return RUN_RESULT_MEMORY;
        if (f->cpu_limit_hit)
                return RUN_RESULT_TIMEOUT;
        if (f->oom_unobservable && WIFSIGNALED(f->wait_status) && WTERMSIG(f->wait_status) == SIGKILL)
                return RUN_RESULT_MEMORY;
        if (WIFSIGNALED(f->wait_status) && WTERMSIG(f->wait_status) == SIGSYS)
                return RUN_RESULT_SECCOMP;
        if (WIFEXITED(f->wait_status) && WEXITSTATUS(f->wait_status) == 0)
                return RUN_RESULT_OK;
        return RUN_RESULT_ERROR;
}

int result_exit_code(const RunFacts *f) {
        if (f->seccomp_killed && !f->timed_out)
                return 128 + SIGSYS;
        if (WIFEXITED(f->wait_status))
                return WEXITSTATUS(f->wait_status);
        if (WIFSIGNALED(f->wait_status))
                return 128 + WTERMSIG(f->wait_status);
        return -1;
}

int result_format_error(RunResult result, int exit_code, int term_signal, const char *stderr_text,
                        char **ret) {
        return result_format_error_detail(result, exit_code, term_signal, NULL, stderr_text, ret);
}

int result_format_error_detail(RunResult result, int exit_code, int term_signal, const char *detail,
                               const char *stderr_text, char **ret) {
        _cleanup_free_ char *signal_line = NULL;
        const char *line = NULL;
        char *s;

        if (result < 0 || result >= _RUN_RESULT_MAX)
                return -EINVAL;
        if (result == RUN_RESULT_OK && exit_code == 0) {
                s = strdup("");
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        line = result_lines[result];
        if (result == RUN_RESULT_ERROR && term_signal > 0) {
                /* Nothing of the sandbox's explains the signal (an operator's kill, a crash): say which. */
                if (asprintf(&signal_line, "error: killed by signal %d", term_signal) < 0)
                        return -ENOMEM;
                line = signal_line;
        }
        if (asprintf(&s, "process exited with code %d\n%s%s%s%s", exit_code, line ? line : "",
                     line ? "\n" : "", detail ? detail : "", stderr_text ? stderr_text : "") < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}
