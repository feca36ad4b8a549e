#pragma once
/* run: one run, DESIGN §3 steps 2–11, as the parent sees it. A Sandbox holds what every run of this
 * process shares (config, cgroup layout, compiled filters, an empty capability set); sandbox_run() takes
 * a UID, makes the run's cgroup, spawns the child (child.c), pumps its I/O (output.c), reaps it,
 * classifies the result (result.c) and cleans up. It never logs: it returns what failed and the caller,
 * which decides what that means, logs once. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "refusals.h"
#include "result.h"

typedef struct Config Config;
typedef struct PreparedRun PreparedRun;
typedef struct Sandbox Sandbox;
typedef struct SyscallRule SyscallRule;

/* What a run needs of its language. sandbox/ knows no language: its caller (src/runner/, from the
 * descriptors of src/runtime/) hands sandbox_new() one of these per language, and a request names its
 * language by its index in that table. The strings and rows are borrowed for the sandbox's lifetime. */
typedef struct RunLanguage {
        const char *name;                     /* runtime tree directory under runtime_dir; failure detail */
        const char *interpreter;              /* host path; the runtime tree holds it at the same path */
        const char *const *argv_tail;         /* arguments after the interpreter path, NULL-terminated */
        const char *const *network_argv_tail; /* the same for a run with network */
        const char *const *environment;       /* the whole environment of a run without network */
        const char *preload_variable;         /* NAME the bootstrap reads the preload list from */
        char *const *preload;                 /* modules a preloaded run imports while it waits, or NULL */
        const SyscallRule *rules;             /* seccomp rows beyond the common table, sorted by name */
        size_t n_rules;
} RunLanguage;

typedef struct RunRequest {
        unsigned language; /* index in the table given to sandbox_new() */
        const char *code;
        size_t code_len;
        bool network;
        uint64_t timeout_usec; /* 0: the config's worker_timeout */
        uint64_t memory_max;   /* 0: the config's memory_max */
        bool preload;          /* the interpreter imports the pool's preload modules while it waits */
} RunRequest;

#define RUN_ID_LEN 32

/* Where a run's time went, in microseconds (DESIGN §3 steps; bench/ and `difysandbox run --timing`).
 * The child builds its root while the parent sets up the scope or cgroup, so root and attach overlap. */
typedef struct RunTiming {
        uint64_t uid;           /* taking a UID of the pool */
        uint64_t cgroup;        /* creating the standalone cgroup (0 under systemd) */
        uint64_t spawn;         /* clone() into the new namespaces, pidfd */
        uint64_t attach;        /* into the scope (systemd job) or cgroup, until the child is released */
        uint64_t root;          /* in the child: from clone to the root being ready */
        uint64_t creds_seccomp; /* in the child: rlimits, credentials, capabilities, exec filter */
        uint64_t interpreter;   /* execve() to the final stage installed: the interpreter's start */
        uint64_t first_output;  /* final stage to the first output byte (0 without output) */
        uint64_t user_code;     /* final stage to the exit of the run's PID 1 */
        uint64_t cleanup;       /* reaping, removing the cgroup, releasing the UID */
} RunTiming;

typedef struct RunOutput {
        char id[RUN_ID_LEN + 1]; /* hex: the scope's name and the journal record's DIFYSANDBOX_RUN_ID */
        RunResult result;
        int exit_code;
        char *stdout_text, *stderr_text, *error; /* valid UTF-8; the outputs may hold NUL bytes */
        size_t stdout_len, stderr_len;
        bool stdout_truncated, stderr_truncated;
        uint64_t duration_usec; /* spawn to reap */
        uint64_t cpu_usec;      /* user + system of the whole run */
        uint64_t memory_peak;   /* bytes, 0 when the cgroup cannot tell */
        uid_t uid;
        bool warm;               /* prepared before its request arrived (sandbox_prepare()) */
        unsigned egress_denials; /* destinations the egress proxy refused */
        Refusals refusals;       /* the system calls its filters refused, named (refusals.h) */
        RunTiming timing;
} RunOutput;

/* Why a run could not be made: the step (run_step_to_string() names it), the error, and for some steps a
 * detail (a path, or what the operator should do). A zeroed RunFailure says RUN_STEP_UNKNOWN. */
typedef struct RunFailure {
        RunStep step;
        int error;
        char *detail;
        bool before_code; /* the run failed before it could read its code: retrying runs nothing twice */
} RunFailure;

/* languages: n_languages entries, copied (what they point to is borrowed). */
int sandbox_new(const Config *cfg, const RunLanguage *languages, size_t n_languages, Sandbox **ret,
                RunFailure *reterr);
/* 0 when runs get a time namespace of their own (src/sandbox/clocks.h); otherwise the negative errno
 * that kept the probe at sandbox_new() from making one (-EPERM: no CAP_SYS_TIME), and runs then read the
 * host's boot and monotonic clocks. Whoever made the sandbox warns about it, once. */
int sandbox_time_namespace(const Sandbox *sb);

/* For a process that starts many runs (the runner), before it forks: makes the namespace the runs'
 * network namespaces are made from (netns-template.h), so that each has a TCP hash table of its own.
 * Returns 0, or a negative errno (-ENOENT: the kernel has no such tables); runs are then made as before,
 * each with a namespace of its own still. */
int sandbox_open_netns_template(Sandbox *sb);
/* Removes this instance's run cgroups (not scopes: systemd collects those) whose UID nobody holds, without
 * waiting: their holder was killed while its run was still exiting, after the sweep at start had passed
 * (kill the server mid-run, restart it at once). Cheap enough for a periodic tick. */
void sandbox_sweep(Sandbox *sb);
Sandbox *sandbox_free(Sandbox *sb);
/* Compiles every filter this configuration can need, so that processes forked later share them. */
int sandbox_compile_filters(Sandbox *sb, RunFailure *reterr);
/* In a child forked from the process that made sb: its own bus connection to systemd (sd-bus objects
 * are not usable across fork()). */
int sandbox_after_fork(Sandbox *sb, RunFailure *reterr);

/* 0 when the snippet ran, whatever its result; negative errno when the sandbox failed, with *reterr
 * set (the caller frees reterr->detail with run_failure_done()). sandbox_prepare() then
 * prepared_run_execute(), in one go. */
int sandbox_run(Sandbox *sb, const RunRequest *req, RunOutput *ret, RunFailure *reterr);

/* A run made ahead of its code (steps 2–7): UID, cgroup or scope, namespaces, root, credentials, both
 * seccomp stages, the interpreter started and blocked reading fd 3. Nothing of a user's has run in it;
 * its wall-clock deadline starts when the code is given. req->code is not used; language, network and
 * memory_max are, and prepared_run_matches() tells whether a later request can use it: only while the
 * language's dependency generation it holds (share-locked, mounted at RUNTIME_PACKAGES_MOUNT, in
 * common/generation.h) is still the
 * current one. */
int sandbox_prepare(Sandbox *sb, const RunRequest *req, PreparedRun **ret, RunFailure *reterr);
bool prepared_run_matches(const Sandbox *sb, const PreparedRun *p, const RunRequest *req);
/* Gives the run its code and finishes it (steps 8–11). Consumes p, whatever the outcome. A failure of a
 * run that waited (the child died meanwhile) is worth one retry with a fresh run. */
int prepared_run_execute(Sandbox *sb, PreparedRun *p, const char *code, size_t code_len,
                         uint64_t timeout_usec, RunOutput *ret, RunFailure *reterr);
/* The dependency generation a prepared run holds (0: none), and its pidfd, which polls readable once the
 * interpreter has died while it waited. */
uint64_t prepared_run_packages_generation(const PreparedRun *p);
int prepared_run_pidfd(const PreparedRun *p);
/* Waits until the interpreter has imported its preloads and waits for its code (its bootstrap closed
 * ENTER_FD_READY), so that a request handed this run does not wait for the imports. Meanwhile it answers
 * the calls its filters refuse, as the run's execution will (refusals.h). -ESRCH: it died; -EPERM: it made
 * a never-allowed call, and must be dropped (prepared_run_free() kills it); -ETIMEDOUT: not within
 * timeout_usec. */
int prepared_run_wait_waiting(PreparedRun *p, uint64_t timeout_usec);
/* The fd that the bootstrap of a language must close once its preloads are imported (ENTER_FD_READY). */
#define RUN_READY_FD 7
/* Kills and reaps a run that never got its code, and frees what it held. NULL-safe. */
PreparedRun *prepared_run_free(PreparedRun *p);
void run_output_done(RunOutput *out);

/* The journal record of a finished run (log_run_record()); it points into out. */
typedef struct RunRecord RunRecord;
void run_output_record(const RunOutput *out, const char *language, RunRecord *ret);
void run_failure_done(RunFailure *f);
