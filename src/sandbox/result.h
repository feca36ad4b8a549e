#pragma once
/* result: turns what happened to a run into the API's answer (DESIGN §3.10 and §1): the result kind,
 * the exit code, and the `error` text. Pure logic, no I/O. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/run-result.h" /* RunResult and RunStep, and their names */

typedef struct RunFacts {
        int wait_status;       /* as from waitpid() */
        bool timed_out;        /* the wall-clock deadline passed */
        bool cpu_limit_hit;    /* CPU time reached RLIMIT_CPU (inferred from the time used) */
        bool output_truncated; /* the output cap was reached */
        uint64_t oom_kills;    /* OOM kills in the run's cgroup */
        bool oom_unobservable; /* the cgroup was gone before it could be read (a systemd scope): then a
                                * SIGKILL the sandbox did not send is the OOM killer's */
        bool seccomp_killed;   /* its supervisor killed it for a never-allow call (refusals.h) */
} RunFacts;

RunResult result_classify(const RunFacts *facts);
/* The exit status, or 128 + the signal for a run killed by one (the shell's convention). A run killed for a
 * never-allow call says 159 (128 + SIGSYS), as when the kernel's filter killed it: that is what Dify and
 * upstream's users know. */
int result_exit_code(const RunFacts *facts);

/* The API's `error`: empty for exit 0 and RUN_RESULT_OK; otherwise "process exited with code N", then
 * the line of the result ("error: timeout", "error: operation not permitted", "error: memory limit
 * exceeded", "error: output limit exceeded", or for RUN_RESULT_ERROR of a run that term_signal killed
 * "error: killed by signal S"), then the stderr text, each on its own line. term_signal: 0 for none. */
int result_format_error(RunResult result, int exit_code, int term_signal, const char *stderr_text,
                        char **ret);
/* The same with detail: lines (each ending in '\n', e.g. the refused calls of refusals_format()) put after
 * the result's line and before stderr; NULL or "" for none. */
int result_format_error_detail(RunResult result, int exit_code, int term_signal, const char *detail,
                               const char *stderr_text, char **ret);
