/* run-result: see run-result.h. */

#include "run-result.h"

#include <string.h>

static const char *const result_names[_RUN_RESULT_MAX] = {
        [RUN_RESULT_OK] = "ok",           [RUN_RESULT_ERROR] = "error",
        [RUN_RESULT_TIMEOUT] = "timeout", [RUN_RESULT_MEMORY] = "memory",
        [RUN_RESULT_SECCOMP] = "seccomp", [RUN_RESULT_OUTPUT_TRUNCATED] = "output-truncated",
};

static const char *const step_names[_RUN_STEP_MAX] = {
        [RUN_STEP_UNKNOWN] = "unknown",
        [RUN_STEP_RUNNER] = "runner",
        [RUN_STEP_REQUEST] = "request",
        [RUN_STEP_CONFIG] = "config",
        [RUN_STEP_ADMISSION] = "admission",
        [RUN_STEP_INIT] = "init",
        [RUN_STEP_INSTANCE] = "instance",
        [RUN_STEP_CGROUP] = "cgroup",
        [RUN_STEP_SCOPE] = "scope",
        [RUN_STEP_RUNTIME] = "runtime",
        [RUN_STEP_PACKAGES] = "packages",
        [RUN_STEP_UID] = "uid",
        [RUN_STEP_EGRESS] = "egress",
        [RUN_STEP_PIPES] = "pipes",
        [RUN_STEP_SPAWN] = "spawn",
        [RUN_STEP_PREPARED] = "prepared",
        [RUN_STEP_PUMP] = "pump",
        [RUN_STEP_CHILD] = "child",
        [RUN_STEP_ENTER] = "enter",
        [RUN_STEP_RESULT] = "result",
        [RUN_STEP_SYNC] = "sync",
        [RUN_STEP_CLOCKS] = "clocks",
        [RUN_STEP_ROOTFS] = "rootfs",
        [RUN_STEP_HOSTNAME] = "hostname",
        [RUN_STEP_NETWORK] = "network",
        [RUN_STEP_CGROUPNS] = "cgroupns",
        [RUN_STEP_FDS] = "fds",
        [RUN_STEP_RLIMITS] = "rlimits",
        [RUN_STEP_CREDS] = "credentials",
        [RUN_STEP_SIGNALS] = "signals",
        [RUN_STEP_SECCOMP] = "seccomp",
        [RUN_STEP_EXEC] = "exec",
};

const char *run_result_to_string(RunResult result) {
        if (result < 0 || result >= _RUN_RESULT_MAX)
                return NULL;
        return result_names[result];
}

RunResult run_result_from_string(const char *s) {
        for (RunResult r = 0; s && r < _RUN_RESULT_MAX; r++)
                if (strcmp(result_names[r], s) == 0)
                        return r;
        return _RUN_RESULT_INVALID;
}

const char *run_step_to_string(RunStep step) {
        if (step < 0 || step >= _RUN_STEP_MAX)
                return NULL;
        return step_names[step];
}
