#pragma once
/* run-result: the vocabulary of what became of a run, shared by the sandbox, the runner, the API, the
 * journal and the stats file: the result of a run that ran (RunResult), and the step at which one could
 * not be made (RunStep). The names are an interface: the journal's RESULT= field, the API's `error`
 * ("sandbox failed at step 'clocks'") and the Stats D-Bus property say them, and operators match them.
 * Plain values; deciding which one applies is sandbox/result.c's (results) and the failing code's
 * (steps). */

#include <errno.h>

typedef enum RunResult {
        RUN_RESULT_OK,
        RUN_RESULT_ERROR,
        RUN_RESULT_TIMEOUT,
        RUN_RESULT_MEMORY,
        RUN_RESULT_SECCOMP,
        RUN_RESULT_OUTPUT_TRUNCATED,
        _RUN_RESULT_MAX,
        _RUN_RESULT_INVALID = -EINVAL,
} RunResult;

const char *run_result_to_string(RunResult result); /* "ok", ..., "output-truncated"; NULL if invalid */
RunResult run_result_from_string(const char *s);

/* Where making a run failed. A name may be said by more than one side of the chain ("sync", "network",
 * "seccomp"): it names the step, whoever noticed. RUN_STEP_UNKNOWN is a failure whose step nobody set. */
typedef enum RunStep {
        RUN_STEP_UNKNOWN,

        /* the runner, around the sandbox (src/runner) */
        RUN_STEP_RUNNER,    /* the runner could not hand the run to a handler */
        RUN_STEP_REQUEST,   /* the request's code could not be read */
        RUN_STEP_CONFIG,    /* the configuration could not be formatted for a worker */
        RUN_STEP_ADMISSION, /* the admission state (max_workers, max_requests) cannot be used */

        /* the parent, making the run (src/sandbox/run.c) */
        RUN_STEP_INIT,     /* the sandbox's own state, the run's id, argv and environment */
        RUN_STEP_INSTANCE, /* this instance's UID range among its neighbours' */
        RUN_STEP_CGROUP,   /* the run's cgroup (cgroup v2 delegated to us) */
        RUN_STEP_SCOPE,    /* the run's systemd scope, or the bus connection to systemd */
        RUN_STEP_RUNTIME,  /* the language's runtime tree and interpreter */
        RUN_STEP_PACKAGES, /* the dependency generation's mount */
        RUN_STEP_UID,      /* a UID of the pool */
        RUN_STEP_EGRESS,   /* the egress relay of a run with network */
        RUN_STEP_PIPES,    /* the pipes between the parent and the run */
        RUN_STEP_SPAWN,    /* clone() of the child */
        RUN_STEP_PREPARED, /* a prepared run died while it waited for its code */
        RUN_STEP_PUMP,     /* passing the code, collecting the output */
        RUN_STEP_CHILD,    /* the child failed a step it did not name */
        RUN_STEP_ENTER,    /* the final seccomp stage was not confirmed */
        RUN_STEP_RESULT,   /* turning the output and exit into the run's answer */

        /* the child's (child_run() in src/sandbox/child.c, DESIGN §3) */
        RUN_STEP_SYNC,     /* waiting for the parent to put us into the run's cgroup */
        RUN_STEP_CLOCKS,   /* time namespace: boot and monotonic clocks count from the run's start */
        RUN_STEP_ROOTFS,   /* private read-only root, /tmp, /dev, pivot_root */
        RUN_STEP_HOSTNAME, /* UTS namespace name */
        RUN_STEP_NETWORK,  /* the network namespace made from the template (netns-template.h); with
                            * network: lo up, the egress proxy's listener handed to the parent; and the
                            * parent's refusal of a run with network when enable_network is off */
        RUN_STEP_CGROUPNS, /* cgroup namespace rooted at the run's cgroup */
        RUN_STEP_FDS,      /* stdio and the enter library's fds in place, nothing else inherited */
        RUN_STEP_RLIMITS,  /* CPU time, open files, tasks, file size, core dumps */
        RUN_STEP_CREDS,    /* bounding set, setgroups → setgid → setuid, capabilities, no_new_privs */
        RUN_STEP_SIGNALS,  /* default dispositions and an empty mask for the interpreter */
        RUN_STEP_SECCOMP,  /* the exec stage of the filter; in the parent, compiling the filters */
        RUN_STEP_EXEC,     /* execve() of the interpreter inside the root */
        _RUN_STEP_MAX,
        _RUN_STEP_INVALID = -EINVAL,
} RunStep;

const char *run_step_to_string(RunStep step); /* "clocks", "credentials", ...; NULL if invalid */
