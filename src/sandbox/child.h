#pragma once
/* child: the run's first process, from clone() to execve() of the interpreter (DESIGN §3, steps 3–7).
 * child_run() is the table of contents of the isolation chain; each step is one call into its own
 * file. The child allocates nothing (it is a clone of a process that may have threads): everything it
 * needs is prepared by the parent in a RunPlan. It never logs: it reports (step, errno) on its status
 * pipe and _exit()s, and the parent logs. Its steps are RunStep's RUN_STEP_SYNC to RUN_STEP_EXEC
 * (common/run-result.h). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/capability.h>
#include <sys/types.h>

#include "common/run-result.h"

typedef struct SeccompProgram SeccompProgram;

/* What the child reports on its status pipe (close-on-exec, so the parent reads EOF once the interpreter
 * is executing): a failed step, or right before execve() the CLOCK_MONOTONIC times of its own steps
 * (on the parent's clock) and the run's time namespace's monotonic offset. */
typedef enum ChildReportKind {
        CHILD_REPORT_FAILURE,
        CHILD_REPORT_TIMING,
} ChildReportKind;

typedef struct ChildReport {
        int32_t kind;  /* ChildReportKind */
        int32_t step;  /* RunStep, for CHILD_REPORT_FAILURE */
        int32_t error; /* negative errno, for CHILD_REPORT_FAILURE */
        int32_t reserved;
        uint64_t root_done_usec;        /* the root is ready (mounts, pivot_root) */
        uint64_t sync_done_usec;        /* the parent has put us into the scope or cgroup */
        uint64_t creds_done_usec;       /* rlimits, credentials, capabilities, no_new_privs, exec filter */
        uint64_t monotonic_offset_usec; /* what the run's CLOCK_MONOTONIC lags ours by (time namespace) */
} ChildReport;

typedef struct RunPlan {
        /* root (rootfs.c): all paths are absolute host paths, computed by the parent */
        const char *root;            /* the runtime tree, bound read-only as / */
        const char *root_tmp;        /* <root>/tmp */
        const char *tmp_options;     /* tmpfs options of /tmp: size, nr_inodes, mode */
        const char *root_proc;       /* <root>/proc, or NULL for a tree built without it */
        const char *dev_sources[3];  /* /dev/null, /dev/zero, /dev/urandom */
        const char *dev_targets[3];  /* <root>/dev/... */
        const char *support_source;  /* the enter library's directory on the host: it and the Node.js
                                      * proxy shim, nothing else */
        const char *support_target;  /* <root>/usr/lib/difysandbox */
        int packages_fd;             /* the dependency generation, a detached read-only mount of the very
                                      * directory the parent holds share-locked (rootfs_open_packages());
                                      * -EBADF: no generation, no mount */
        const char *packages_target; /* <root>RUNTIME_PACKAGES_MOUNT, NULL without a generation */

        /* clocks (clocks.h): false where the probe found no time namespace possible (no CAP_SYS_TIME) */
        bool time_namespace;
        uint64_t clock_start_nsec; /* what the run's boot and monotonic clocks read at its start, in ns */

        /* identity and limits */
        uid_t uid;
        gid_t gid;
        cap_t no_caps;        /* an empty capability set, allocated by the parent */
        uint64_t cpu_seconds; /* RLIMIT_CPU */
        uint64_t open_files;  /* RLIMIT_NOFILE */
        uint64_t tasks;       /* RLIMIT_NPROC: the UID is the run's alone, so this counts the run */
        uint64_t file_size;   /* RLIMIT_FSIZE */

        const SeccompProgram *exec_stage;
        const char *exec_path; /* the interpreter, same path inside the root */
        char *const *argv;
        char *const *envp;

        /* fds of the parent's pipes, child ends */
        int sync_fd;   /* read: one byte when the child is in its cgroup; EOF = parent gone */
        int status_fd; /* write, close-on-exec: ChildReport records */
        int code_fd;   /* read: the code, becomes ENTER_FD_CODE */
        int filter_fd; /* read: the final stage, becomes ENTER_FD_FILTER */
        int ack_fd;    /* write: becomes ENTER_FD_ACK */
        int ready_fd;  /* write: becomes ENTER_FD_READY, which the bootstrap closes */
        int stdout_fd, stderr_fd;
        int proxy_sock;        /* with network: where the egress listener goes (SCM_RIGHTS); else -EBADF */
        int netns_template_fd; /* the child makes its network namespace from it (netns_enter_new());
                                * -EBADF: the clone made one */
} RunPlan;

/* Runs the chain and execs the interpreter; returns only on failure, after reporting it. */
void child_run(const RunPlan *plan) __attribute__((noreturn));
