/* run: see run.h. */

#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "child.h"
#include "clocks.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/generation.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/time-util.h"
#include "common/utf8.h"
#include "egress/egress.h"
#include "enter/enter-protocol.h"
#include "instance.h"
#include "netns-template.h"
#include "netns.h"
#include "output.h"
#include "rootfs.h"
#include "scope.h"
#include "seccomp.h"
#include "uidpool.h"

DEFINE_POINTER_CLEANUP(UidLease *, uidpool_release);
DEFINE_POINTER_CLEANUP(RunCgroup *, cgroup_run_destroy);
DEFINE_POINTER_CLEANUP(CgroupLayout *, cgroup_layout_free);
DEFINE_POINTER_CLEANUP(Sandbox *, sandbox_free);
DEFINE_POINTER_CLEANUP(EgressRelay *, egress_stop);

#define RUNS_SLICE "difysandbox-runs.slice"
#define SCOPE_JOB_TIMEOUT_USEC (10ULL * 1000000ULL)

struct Sandbox {
        const Config *cfg;
        Instance *instance;     /* our identity and our claim on the UID range (instance.h) */
        ScopeManager *scopes;   /* systemd is PID 1: runs go into transient scopes */
        CgroupLayout *cgroups;  /* otherwise: cgroupfs below our own cgroup */
        bool clone_into_cgroup; /* v2 standalone: a run is born in its cgroup (clone_child()) */
        bool scope_oom_counter; /* in a scope: a run reads its OOM count (env_switch()) */
        int no_time_namespace;  /* 0, or why runs have no time namespace here (clocks_probe()) */
        cap_t no_caps;
        int netns_template_fd;  /* runs' network namespaces are made from it, or -EBADF (netns-template.h) */
        RunLanguage *languages; /* sandbox_new()'s table, indexed by RunRequest.language */
        size_t n_languages;
        /* compiled on first use, once per process: [language][network][stage] */
        SeccompProgram *(*filters)[2][_SECCOMP_STAGE_MAX];
};

static const char *const dev_nodes[3] = { "/dev/null", "/dev/zero", "/dev/urandom" };
/* The directory of the enter library (and the Node.js proxy shim) on the host is bound here. */
#define SUPPORT_DIR "/usr/lib/difysandbox"

static int fail(RunFailure *reterr, RunStep step, int error, const char *detail) {
        if (reterr) {
                *reterr = (RunFailure){ .step = step, .error = error };
                if (detail)
                        reterr->detail = strdup(detail); /* best effort: the step and error still tell */
        }
        return error;
}

void run_failure_done(RunFailure *f) {
        free(f->detail);
        *f = (RunFailure){ 0 };
}

/* Run cgroups whose UID nobody holds were left by a holder that was killed: remove them, holding the UID
 * meanwhile so that no new run can claim the name. Best effort: the next holder of such a UID cleans its
 * cgroup anyway (cgroup_run_create). */
static void sweep_stale_cgroups(Sandbox *sb, bool wait) {
        _cleanup_free_ uid_t *uids = NULL;
        size_t n = 0;

        if (cgroup_list_runs(sb->cgroups, &uids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(uidpool_releasep) UidLease *lease = NULL;
                if (uidpool_take_uid(sb->cfg->state_dir, uids[i], &lease) < 0)
                        continue; /* held: a live run's */
                (void) cgroup_run_remove(sb->cgroups, uids[i], wait);
        }
}

void sandbox_sweep(Sandbox *sb) {
        if (sb->cgroups) /* scopes are systemd's to collect */
                sweep_stale_cgroups(sb, /* wait= */ false);
}

/* A switch of the environment for measuring and testing, on unless it is 0:
 * - DIFYSANDBOX_CLONE_INTO_CGROUP=0 makes runs on v2 take the migration path of v1 (clone, then attach),
 *   to measure what clone3(CLONE_INTO_CGROUP) saves, or to rule it out;
 * - DIFYSANDBOX_SCOPE_OOM_COUNTER=0 has a run in a scope read no count of its own, as when systemd
 *   removes the scope before its exit: what decides then is tested (tests/vm). */
static int env_switch(const char *name, bool *ret) {
        const char *v = getenv(name);

        if (!v || streq(v, "1"))
                *ret = true;
        else if (streq(v, "0"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

int sandbox_new(const Config *cfg, const RunLanguage *languages, size_t n_languages, Sandbox **ret,
                RunFailure *reterr) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        int r;

        sb = calloc(1, sizeof(*sb));
        if (!sb)
                return fail(reterr, RUN_STEP_INIT, -ENOMEM, NULL);
        sb->cfg = cfg;
        sb->netns_template_fd = -EBADF;
        sb->languages = calloc(n_languages ? n_languages : 1, sizeof(RunLanguage));
        sb->filters = calloc(n_languages ? n_languages : 1, sizeof(*sb->filters));
        if (!sb->languages || !sb->filters)
                return fail(reterr, RUN_STEP_INIT, -ENOMEM, NULL);
        if (n_languages > 0)
                memcpy(sb->languages, languages, n_languages * sizeof(RunLanguage));
        sb->n_languages = n_languages;

        /* Before any cgroup is touched: a neighbour's range must not be ours, and the sweep below must
         * know which run cgroups are ours. */
        _cleanup_free_ char *reason = NULL;
        r = instance_register(NULL, cfg->state_dir, cfg->uid_min, cfg->uid_max, &sb->instance, &reason);
        if (r < 0)
                return fail(reterr, RUN_STEP_INSTANCE, r, reason ? reason : INSTANCE_REGISTRY_DIR);

        r = scope_manager_open(&sb->scopes);
        if (r == -ENOMEDIUM) {
                r = cgroup_layout_detect(instance_get_id(sb->instance), &sb->cgroups);
                if (r < 0)
                        return fail(reterr, RUN_STEP_CGROUP, r,
                                    "no usable memory, pids and cpu cgroup controllers");
                sweep_stale_cgroups(sb, /* wait= */ true);
                r = env_switch("DIFYSANDBOX_CLONE_INTO_CGROUP", &sb->clone_into_cgroup);
                if (r < 0)
                        return fail(reterr, RUN_STEP_CGROUP, r,
                                    "DIFYSANDBOX_CLONE_INTO_CGROUP must be 0 or 1 (unset means 1)");
                sb->clone_into_cgroup = sb->clone_into_cgroup && cgroup_layout_is_v2(sb->cgroups);
        } else if (r < 0)
                return fail(reterr, RUN_STEP_SCOPE, r, "cannot connect to systemd on the system bus");
        else if (env_switch("DIFYSANDBOX_SCOPE_OOM_COUNTER", &sb->scope_oom_counter) < 0)
                return fail(reterr, RUN_STEP_SCOPE, -EINVAL,
                            "DIFYSANDBOX_SCOPE_OOM_COUNTER must be 0 or 1 (unset means 1)");

        sb->no_time_namespace = clocks_probe(); /* the caller warns: sandbox_time_namespace() */

        sb->no_caps = cap_init(); /* empty: the child sets it after setuid() */
        if (!sb->no_caps)
                return fail(reterr, RUN_STEP_INIT, -ENOMEM, NULL);

        *ret = TAKE_PTR(sb);
        return 0;
}

int sandbox_time_namespace(const Sandbox *sb) {
        return sb->no_time_namespace;
}

int sandbox_open_netns_template(Sandbox *sb) {
        int r;

        if (sb->netns_template_fd >= 0)
                return 0;
        r = netns_template_open(&sb->netns_template_fd);
        if (r < 0)
                sb->netns_template_fd = -EBADF;
        return r;
}

Sandbox *sandbox_free(Sandbox *sb) {
        if (!sb)
                return NULL;
        for (size_t l = 0; sb->filters && l < sb->n_languages; l++)
                for (int net = 0; net < 2; net++)
                        for (SeccompStage s = 0; s < _SECCOMP_STAGE_MAX; s++)
                                seccomp_program_free(sb->filters[l][net][s]);
        free(sb->filters);
        free(sb->languages);
        if (sb->no_caps)
                (void) cap_free(sb->no_caps);
        (void) safe_close(sb->netns_template_fd);
        cgroup_layout_free(sb->cgroups);
        scope_manager_free(sb->scopes);
        instance_free(sb->instance);
        free(sb);
        return NULL;
}

/* The two stages for a run, compiled on first use and kept for the process's later runs: a worker that
 * only ever runs Python never compiles Node.js's filters. */
static int sandbox_filters(Sandbox *sb, unsigned language, bool network, SeccompProgram **ret_exec,
                           SeccompProgram **ret_final, RunFailure *reterr) {
        const RunLanguage *lang = &sb->languages[language];
        SeccompProgram **slot = sb->filters[language][network];
        int r;

        for (SeccompStage s = 0; s < _SECCOMP_STAGE_MAX; s++) {
                if (slot[s])
                        continue;
                r = seccomp_compile(lang->rules, lang->n_rules, network, s, sb->cfg->allowed_syscalls,
                                    &slot[s]);
                if (r < 0)
                        return fail(reterr, RUN_STEP_SECCOMP, r, lang->name);
        }
        *ret_exec = slot[SECCOMP_STAGE_EXEC];
        *ret_final = slot[SECCOMP_STAGE_FINAL];
        return 0;
}

int sandbox_compile_filters(Sandbox *sb, RunFailure *reterr) {
        SeccompProgram *exec_stage, *final_stage;
        int r;

        for (unsigned l = 0; l < sb->n_languages; l++)
                for (int net = 0; net <= (int) sb->cfg->enable_network; net++) {
                        r = sandbox_filters(sb, l, net, &exec_stage, &final_stage, reterr);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int sandbox_after_fork(Sandbox *sb, RunFailure *reterr) {
        int r;

        if (!sb->scopes)
                return 0;                            /* standalone: cgroupfs needs no connection */
        sb->scopes = scope_manager_free(sb->scopes); /* closes our copy of the parent's socket */
        r = scope_manager_open(&sb->scopes);
        if (r < 0)
                return fail(reterr, RUN_STEP_SCOPE, r, "cannot connect to systemd on the system bus");
        return 0;
}

/* The runtime tree of the language's current generation, resolved once so that the run keeps it even if
 * a new generation is switched in meanwhile. It must be root-owned and not writable by others, and hold
 * the interpreter at its host path. */
static int resolve_tree(const Config *cfg, const RunLanguage *lang, char **ret_root, RunFailure *reterr) {
        _cleanup_free_ char *link = NULL, *root = NULL, *exe = NULL;
        struct stat st;

        if (asprintf(&link, "%s/%s/current", cfg->runtime_dir, lang->name) < 0)
                return fail(reterr, RUN_STEP_RUNTIME, -ENOMEM, NULL);
        root = realpath(link, NULL);
        if (!root)
                return fail(reterr, RUN_STEP_RUNTIME, -errno, link);
        if (stat(root, &st) < 0)
                return fail(reterr, RUN_STEP_RUNTIME, -errno, root);
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0022) != 0)
                return fail(reterr, RUN_STEP_RUNTIME, -EPERM, root);
        if (asprintf(&exe, "%s%s", root, lang->interpreter) < 0)
                return fail(reterr, RUN_STEP_RUNTIME, -ENOMEM, NULL);
        if (access(exe, X_OK) < 0)
                return fail(reterr, RUN_STEP_RUNTIME, -errno, exe);
        *ret_root = TAKE_PTR(root);
        return 0;
}

/* A generation is mounted onto RUNTIME_PACKAGES_MOUNT, which must be a directory of the tree itself (no
 * symlink on the way, which the mount would follow): trees built before it existed have none, and a run
 * must not start without the packages it was promised. */
static int check_packages_mount(const char *root, RunFailure *reterr) {
        _cleanup_free_ char *target = NULL, *resolved = NULL, *detail = NULL;
        struct stat st;
        int r;

        if (asprintf(&target, "%s" RUNTIME_PACKAGES_MOUNT, root) < 0)
                return fail(reterr, RUN_STEP_PACKAGES, -ENOMEM, NULL);
        resolved = realpath(target, NULL);
        if (!resolved)
                r = -errno;
        else if (!streq(resolved, target))
                r = -ENOTDIR; /* a symlink on the way */
        else if (stat(target, &st) < 0)
                r = -errno;
        else if (!S_ISDIR(st.st_mode))
                r = -ENOTDIR;
        else
                return 0;
        if (r == -ENOENT || r == -ENOTDIR) {
                if (asprintf(&detail,
                             "runtime tree %s has no directory " RUNTIME_PACKAGES_MOUNT
                             " for the dependency generation: rebuild it with difysandbox-prepare-runtime",
                             root) < 0)
                        detail = NULL;
                return fail(reterr, RUN_STEP_PACKAGES, r, detail ? detail : target);
        }
        return fail(reterr, RUN_STEP_PACKAGES, r, target);
}

/* Strings the child needs, computed here because the child allocates nothing. */
typedef struct PlanStrings {
        char *root_tmp, *tmp_options, *root_proc, *dev_targets[3], *support_source, *support_target,
                *exec_path;
        char *packages_target; /* NULL without a generation */
        char **envp;
} PlanStrings;

static void plan_strings_done(PlanStrings *s) {
        free(s->root_tmp);
        free(s->tmp_options);
        free(s->root_proc);
        for (int i = 0; i < 3; i++)
                free(s->dev_targets[i]);
        free(s->support_source);
        free(s->support_target);
        free(s->packages_target);
        free(s->exec_path);
        (void) strv_free(s->envp);
}

/* A run with network reaches out only through the egress proxy in its namespace (netns.h). */
static const char *const proxy_environment[] = {
        "HTTP_PROXY=" EGRESS_PROXY_URL,
        "HTTPS_PROXY=" EGRESS_PROXY_URL,
        "ALL_PROXY=" EGRESS_PROXY_URL,
        "http_proxy=" EGRESS_PROXY_URL,
        "https_proxy=" EGRESS_PROXY_URL,
        "all_proxy=" EGRESS_PROXY_URL,
        "NO_PROXY=",
        "no_proxy=", /* everything goes through the proxy */
        NULL,
};

/* NAME=a,b,c of the language's preload list (its preload_variable), or NULL when it is empty. */
static int preload_entry(const RunLanguage *lang, char **ret) {
        char *const *modules = lang->preload;
        size_t len = strlen(lang->preload_variable) + 2;
        char *entry;

        *ret = NULL;
        if (!modules || !modules[0])
                return 0;
        for (char *const *m = modules; *m; m++)
                len += strlen(*m) + 1;
        entry = malloc(len);
        if (!entry)
                return -ENOMEM;
        strcpy(entry, lang->preload_variable);
        strcat(entry, "=");
        for (char *const *m = modules; *m; m++) {
                if (m != modules)
                        strcat(entry, ",");
                strcat(entry, *m); /* sized above; names hold no comma (config-file.c) */
        }
        *ret = entry;
        return 0;
}

static int plan_strings_make(const Config *cfg, const RunLanguage *lang, bool network, bool preload,
                             const char *root, bool packages, PlanStrings *s) {
        size_t n_env = 0;

        if (packages && asprintf(&s->packages_target, "%s" RUNTIME_PACKAGES_MOUNT, root) < 0)
                return -ENOMEM;

        if (asprintf(&s->root_tmp, "%s/tmp", root) < 0 ||
            asprintf(&s->tmp_options, "size=%" PRIu64 ",nr_inodes=%u,mode=1777", cfg->tmp_size, 16384U) <
                    0 ||
            asprintf(&s->support_target, "%s" SUPPORT_DIR, root) < 0 ||
            asprintf(&s->root_proc, "%s/proc", root) < 0)
                return -ENOMEM;
        /* A tree built before it had /proc (an upgrade whose trees are not rebuilt yet) runs without. */
        if (access(s->root_proc, F_OK) < 0)
                s->root_proc = (free(s->root_proc), NULL);
        for (int i = 0; i < 3; i++)
                if (asprintf(&s->dev_targets[i], "%s%s", root, dev_nodes[i]) < 0)
                        return -ENOMEM;
        s->exec_path = strdup(lang->interpreter);
        s->support_source = strdup(cfg->enter_library);
        if (!s->exec_path || !s->support_source)
                return -ENOMEM;
        *strrchr(s->support_source, '/') = '\0'; /* an absolute path: config-file.c checks */

        size_t n_rt = 0, n_extra = 0, n_proxy = 0;
        char *entry;

        for (const char *const *e = lang->environment; *e; e++)
                n_rt++;
        for (const char *const *e = proxy_environment; network && *e; e++)
                n_proxy++;
        for (char **v = cfg->allowed_env_vars; v && *v; v++)
                n_extra++;
        s->envp = calloc(n_rt + n_proxy + n_extra + 3, sizeof(char *));
        if (!s->envp)
                return -ENOMEM;
        for (size_t i = 0; i < n_rt; i++)
                if (!(s->envp[n_env++] = strdup(lang->environment[i])))
                        return -ENOMEM;
        for (size_t i = 0; i < n_proxy; i++)
                if (!(s->envp[n_env++] = strdup(proxy_environment[i])))
                        return -ENOMEM;
        /* allowed_env_vars: the operator's choice of our variables, except the loader's (LD_*: the
         * enter library must be the only preload) and those the run already has. */
        for (char **v = cfg->allowed_env_vars; v && *v; v++) {
                const char *value = getenv(*v);
                bool taken = strncmp(*v, "LD_", 3) == 0;

                for (size_t i = 0; i < n_env && !taken; i++) /* the runtime's and the proxy's */
                        taken = strncmp(s->envp[i], *v, strlen(*v)) == 0 && s->envp[i][strlen(*v)] == '=';
                if (!value || taken)
                        continue;
                if (asprintf(&entry, "%s=%s", *v, value) < 0)
                        return -ENOMEM; /* envp stays NULL-terminated for plan_strings_done() */
                s->envp[n_env++] = TAKE_PTR(entry);
        }
        if (preload) {
                if (preload_entry(lang, &entry) < 0)
                        return -ENOMEM;
                if (entry)
                        s->envp[n_env++] = TAKE_PTR(entry);
        }
        if (asprintf(&entry, "LD_PRELOAD=" SUPPORT_DIR "/%s", basename(cfg->enter_library)) < 0)
                return -ENOMEM;
        s->envp[n_env] = TAKE_PTR(entry);
        return 0;
}

typedef struct Pipes {
        int fds[8][2];
} Pipes;
enum { PIPE_SYNC, PIPE_STATUS, PIPE_CODE, PIPE_FILTER, PIPE_ACK, PIPE_STDOUT, PIPE_STDERR, PIPE_READY };

static void pipes_close(Pipes *p) {
        for (size_t i = 0; i < ELEMENTSOF(p->fds); i++)
                for (int j = 0; j < 2; j++)
                        p->fds[i][j] = safe_close(p->fds[i][j]);
}

static void pipes_init(Pipes *p) {
        for (size_t i = 0; i < ELEMENTSOF(p->fds); i++)
                p->fds[i][0] = p->fds[i][1] = -EBADF;
}

static int pipes_open(Pipes *p) {
        for (size_t i = 0; i < ELEMENTSOF(p->fds); i++) {
                /* The ack carries the final stage's seccomp listener: a socket, for SCM_RIGHTS. */
                int r = i == PIPE_ACK ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->fds[i])
                                      : pipe2(p->fds[i], O_CLOEXEC);
                if (r < 0)
                        return -errno;
        }
        return 0;
}

/* Writes the enter library's config and the final stage into its pipe before the child exists: they fit in
 * the pipe buffer (a BPF program is at most 32 KiB), so this never blocks. */
static int write_all(int fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

static int write_filter(int fd, const SeccompProgram *prog, uint64_t memory_max, uint64_t tmp_size) {
        EnterConfig config = { .magic = ENTER_CONFIG_MAGIC, .memory_max = memory_max, .tmp_size = tmp_size };
        int r;

        r = write_all(fd, &config, sizeof(config));
        if (r < 0)
                return r;
        return write_all(fd, prog->prog.filter, prog->prog.len * sizeof(struct sock_filter));
}

/* Receives the egress listener the child made inside its namespace; the relay starts on it once the run
 * connects (start_relay()). A child that died before handing it over (-EPIPE) reports its own failure on
 * the status pipe: let the pump read it. */
static int receive_egress_listener(int sock, int *ret_listener, RunFailure *reterr) {
        int r;

        r = netns_receive_fd(sock, ret_listener);
        if (r == -EPIPE)
                return 0;
        if (r < 0)
                return fail(reterr, RUN_STEP_EGRESS, r, NULL);
        return 0;
}

/* 128 random bits in hex: names the run's scope and its journal record. */
static int run_id_make(char id[static RUN_ID_LEN + 1]) {
        uint8_t bytes[RUN_ID_LEN / 2];

        if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t) sizeof(bytes))
                return -EIO;
        for (size_t i = 0; i < sizeof(bytes); i++)
                (void) snprintf(id + 2 * i, 3, "%02x", bytes[i]);
        return 0;
}

/* Puts pid into the run's scope (systemd) or cgroup (standalone). */
static int attach(Sandbox *sb, RunCgroup *cg, const char *id, pid_t pid, const CgroupLimits *limits,
                  RunFailure *reterr) {
        _cleanup_free_ char *unit = NULL, *description = NULL, *why = NULL;
        int r;

        if (cg) {
                r = cgroup_run_attach(cg, pid);
                return r < 0 ? fail(reterr, RUN_STEP_CGROUP, r, NULL) : 0;
        }
        if (asprintf(&unit, "difysandbox-run-%s.scope", id) < 0 ||
            asprintf(&description, "difysandbox run of instance %s", instance_get_id(sb->instance)) < 0)
                return fail(reterr, RUN_STEP_SCOPE, -ENOMEM, NULL);
        r = scope_start(sb->scopes, unit, description, RUNS_SLICE, pid, limits, SCOPE_JOB_TIMEOUT_USEC,
                        &why);
        return r < 0 ? fail(reterr, RUN_STEP_SCOPE, r, why ? why : unit) : 0;
}

/* The OOM counters of the run's scope and of its slice (cgroup_open_oom_counter()), or a negative errno. */
static int open_scope_oom_counter(pid_t pid, const char *id, int *ret_slice_fd) {
        char unit[RUN_ID_LEN + sizeof("difysandbox-run-.scope")];

        (void) snprintf(unit, sizeof(unit), "difysandbox-run-%s.scope", id);
        return cgroup_open_oom_counter(pid, unit, ret_slice_fd);
}

/* Releasing the child failed. If it is because the child is gone (EPIPE: nobody reads the sync pipe), it
 * failed a step of its own before it and said which on its status pipe (whose write ends are all closed
 * by now, so this read cannot block): report that step rather than the sync. */
static int sync_failed(int status_fd, int error, RunFailure *reterr) {
        ChildReport report;

        if (error == -EPIPE && read(status_fd, &report, sizeof(report)) == (ssize_t) sizeof(report) &&
            report.kind == CHILD_REPORT_FAILURE && report.error < 0 && run_step_to_string(report.step))
                return fail(reterr, report.step, report.error, NULL);
        return fail(reterr, RUN_STEP_SYNC, error, NULL);
}

/* Fork-like clone (no new stack): the child runs on a copy of ours. With cgroup_fd (v2), clone3() has it
 * born in the run's cgroup: it never runs a moment in ours, and no migration follows (cheaper than
 * writing cgroup.procs, which waits for the cgroup's RCU grace period). *ret_born_in_cgroup says whether
 * that happened; a kernel without CLONE_INTO_CGROUP (before 5.7) gets the plain clone and an attach. */
static pid_t clone_child(unsigned long flags, int cgroup_fd, bool *ret_born_in_cgroup) {
        *ret_born_in_cgroup = false;
        if (cgroup_fd >= 0) {
                struct clone_args args = {
                        .flags = flags | CLONE_INTO_CGROUP,
                        .exit_signal = SIGCHLD,
                        .cgroup = (uint64_t) cgroup_fd,
                };
                pid_t pid = (pid_t) syscall(SYS_clone3, &args, sizeof(args));
                if (pid >= 0 || (errno != ENOSYS && errno != EINVAL && errno != E2BIG)) {
                        *ret_born_in_cgroup = pid >= 0;
                        return pid;
                }
        }
        return (pid_t) syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

struct PreparedRun {
        unsigned language;
        bool network;
        uint64_t memory_max;
        UidLease *lease;
        RunCgroup *cg;
        int egress_listener; /* with network: the listener its child made, until the relay starts on it */
        EgressRelay *relay;  /* started by the run's first connection (start_relay()), or NULL */
        char *packages_dir;  /* <runtime_dir>/<language>/packages */
        Generation packages; /* its current generation when the run was made, share-locked until freed */
        pid_t pid;           /* 0 once reaped */
        int pidfd, code_fd, status_fd, ack_fd, stdout_fd, stderr_fd;
        int ready_fd; /* EOF once the interpreter waits for its code (ENTER_FD_READY) */
        /* Taken while the prepared run imports its preloads (prepared_run_wait_waiting()), so that a call
         * they make which the filters refuse is answered then; else the pump takes the ack itself. */
        bool acked;
        uint64_t ack_usec; /* the run's clock */
        int notify_fd;     /* the final stage's seccomp listener */
        Refusals refusals;
        int oom_fd; /* in a scope: its OOM counter, opened while it exists (cgroup_open_oom_counter()) */
        int slice_oom_fd; /* and its slice's, which counts the kills of every run in it (v2) */
        uint64_t cpu_limit_usec;
        char id[RUN_ID_LEN + 1];
        uint64_t clock_start_nsec; /* its clocks' random start (clocks.h) */
        uint64_t start, t_uid, t_cgroup, t_clone, t_spawned, t_released; /* CLOCK_MONOTONIC */
};

PreparedRun *prepared_run_free(PreparedRun *p) {
        if (!p)
                return NULL;
        if (p->pid > 0) {
                /* Our child; its PID namespace goes with it. */
                (void) syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
                (void) waitpid(p->pid, NULL, 0);
        }
        (void) egress_stop(p->relay);
        (void) safe_close(p->egress_listener);
        (void) safe_close(p->pidfd);
        (void) safe_close(p->code_fd);
        (void) safe_close(p->status_fd);
        (void) safe_close(p->ack_fd);
        (void) safe_close(p->notify_fd);
        (void) safe_close(p->ready_fd);
        (void) safe_close(p->stdout_fd);
        (void) safe_close(p->stderr_fd);
        (void) safe_close(p->oom_fd);
        (void) safe_close(p->slice_oom_fd);
        (void) cgroup_run_destroy(p->cg);
        (void) uidpool_release(p->lease);
        generation_release(&p->packages); /* the run is gone: collection may take it now */
        free(p->packages_dir);
        free(p);
        return NULL;
}

DEFINE_POINTER_CLEANUP(PreparedRun *, prepared_run_free);

_Static_assert(RUN_READY_FD == ENTER_FD_READY, "run.h's promise to the bootstraps is the child's fd");

uint64_t prepared_run_packages_generation(const PreparedRun *p) {
        return p->packages.number;
}

/* The prepared run's ack, once it comes: from then on its listener is answered here until the pump takes
 * it. A run whose ack is not an ack is left to the pump, which reports it unconfirmed. */
static void prepared_run_take_ack(PreparedRun *p) {
        EnterAck ack;
        int listener = -EBADF, r;

        r = output_receive_ack(p->ack_fd, &ack, &listener);
        if (r == -EAGAIN || r == -EINTR)
                return;
        if (r > 0) {
                p->acked = true;
                p->ack_usec = ack.usec;
                p->notify_fd = listener;
                p->ack_fd = safe_close(p->ack_fd);
        }
}

int prepared_run_wait_waiting(PreparedRun *p, uint64_t timeout_usec) {
        uint64_t deadline = now(CLOCK_MONOTONIC) + timeout_usec;

        for (;;) {
                struct pollfd pfds[4] = {
                        { .fd = p->ready_fd, .events = POLLIN },
                        { .fd = p->pidfd, .events = POLLIN }, /* readable: it died */
                        { .fd = p->acked ? -1 : p->ack_fd, .events = POLLIN },
                        { .fd = p->notify_fd, .events = POLLIN },
                };
                uint64_t t = now(CLOCK_MONOTONIC);
                char byte;

                if (t >= deadline)
                        return -ETIMEDOUT;
                int n = poll(pfds, 4, (int) ((deadline - t + 999) / 1000));
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n <= 0)
                        continue;
                if (pfds[1].revents)
                        return -ESRCH;
                if (pfds[2].revents)
                        prepared_run_take_ack(p);
                if (pfds[3].revents & POLLIN) {
                        int r = refusals_answer(p->notify_fd, &p->refusals);
                        if (r != 0)
                                return r < 0 ? r : -EPERM; /* a never-allow call: the caller drops the run */
                }
                if (pfds[0].revents) {
                        ssize_t r = read(p->ready_fd, &byte, 1); /* nobody writes: EOF, or an error */
                        if (r < 0 && errno == EINTR)
                                continue;
                        p->ready_fd = safe_close(p->ready_fd);
                        return r == 0 ? 0 : -EIO;
                }
        }
}

int prepared_run_pidfd(const PreparedRun *p) {
        return p->pidfd;
}

bool prepared_run_matches(const Sandbox *sb, const PreparedRun *p, const RunRequest *req) {
        uint64_t memory_max = req->memory_max > 0 ? req->memory_max : sb->cfg->memory_max;
        uint64_t current;

        if (!p || p->language != req->language || p->network != req->network || p->memory_max != memory_max)
                return false;
        /* Made before a new generation was switched in: it would serve the old packages, so that "install,
         * then import" would fail on a keep-alive connection. The caller drops it and makes a fresh run. */
        if (generation_current(p->packages_dir, &current) < 0)
                return false;
        return current == p->packages.number;
}

/* A run before anything is taken for it: its kind, limits and clock. */
static int prepared_run_new(const Config *cfg, const RunRequest *req, PreparedRun **ret,
                            RunFailure *reterr) {
        PreparedRun *p = calloc(1, sizeof(*p));

        if (!p)
                return fail(reterr, RUN_STEP_INIT, -ENOMEM, NULL);
        *p = (PreparedRun){
                .language = req->language,
                .network = req->network,
                .memory_max = req->memory_max > 0 ? req->memory_max : cfg->memory_max,
                .packages = GENERATION_NULL,
                .pidfd = -EBADF,
                .code_fd = -EBADF,
                .status_fd = -EBADF,
                .ack_fd = -EBADF,
                .notify_fd = -EBADF,
                .refusals = REFUSALS_NULL,
                .ready_fd = -EBADF,
                .stdout_fd = -EBADF,
                .stderr_fd = -EBADF,
                .oom_fd = -EBADF,
                .slice_oom_fd = -EBADF,
                .egress_listener = -EBADF,
                .cpu_limit_usec = (cfg->cpu_time_usec + 999999) / 1000000 * 1000000,
                .start = now(CLOCK_MONOTONIC),
        };
        *ret = p;
        return 0;
}

/* Step 5's dependencies: the language's current generation, share-locked for as long as the run lasts,
 * so that it keeps what it started with while new generations come and old ones are collected. None
 * yet: the run goes without, as before there were any. *ret_fd: the mount to hand to the child. */
static int take_packages(const Config *cfg, const RunLanguage *lang, const char *root, PreparedRun *p,
                         int *ret_fd, RunFailure *reterr) {
        int r;

        if (asprintf(&p->packages_dir, "%s/%s/" PACKAGES_DIR_NAME, cfg->runtime_dir, lang->name) < 0) {
                p->packages_dir = NULL;
                return fail(reterr, RUN_STEP_INIT, -ENOMEM, NULL);
        }
        r = generation_acquire(p->packages_dir, &p->packages);
        if (r < 0)
                return fail(reterr, RUN_STEP_PACKAGES, r, p->packages_dir);
        if (p->packages.number == 0)
                return 0;
        r = check_packages_mount(root, reterr);
        if (r < 0)
                return r;
        /* Closed once the child has its copy: the mount lives as long as someone holds it. */
        r = rootfs_open_packages(p->packages.dir_fd, ret_fd);
        return r < 0 ? fail(reterr, RUN_STEP_PACKAGES, r, p->packages.path) : 0;
}

/* Step 2, a UID of the pool, which also names the run's cgroup; step 4 standalone, that cgroup with its
 * limits, before the child exists; and the run's id. */
static int take_uid_and_cgroup(Sandbox *sb, PreparedRun *p, const CgroupLimits *limits, RunFailure *reterr) {
        const Config *cfg = sb->cfg;
        int r;

        r = uidpool_take(cfg->state_dir, cfg->uid_min, cfg->uid_max, &p->lease);
        p->t_uid = now(CLOCK_MONOTONIC);
        if (r < 0)
                return fail(reterr, RUN_STEP_UID, r, cfg->state_dir);
        if (sb->cgroups) {
                r = cgroup_run_create(sb->cgroups, p->lease->uid, limits, &p->cg);
                if (r < 0)
                        return fail(reterr, RUN_STEP_CGROUP, r, NULL);
        }
        p->t_cgroup = now(CLOCK_MONOTONIC);
        r = run_id_make(p->id);
        if (r >= 0)
                r = clocks_random_start(&p->clock_start_nsec);
        return r < 0 ? fail(reterr, RUN_STEP_INIT, r, NULL) : 0;
}

/* The interpreter's path, then the language's arguments, NULL-terminated (the strings are borrowed). */
static char **argv_make(const RunLanguage *lang, bool network, char *exec_path) {
        const char *const *tail = network ? lang->network_argv_tail : lang->argv_tail;
        size_t n = 0;
        char **argv;

        while (tail[n])
                n++;
        argv = calloc(n + 2, sizeof(char *));
        if (!argv)
                return NULL;
        argv[0] = exec_path;
        for (size_t i = 0; i < n; i++)
                argv[i + 1] = (char *) tail[i];
        return argv;
}

/* The child's ends of the pipes, the root, credentials and limits it needs (child.h). */
static RunPlan plan_make(const Sandbox *sb, const PreparedRun *p, const char *root, const PlanStrings *strs,
                         const Pipes *pipes, char **argv, SeccompProgram *exec_stage, int packages_fd,
                         int proxy_sock) {
        const Config *cfg = sb->cfg;

        return (RunPlan){
                .root = root,
                .root_tmp = strs->root_tmp,
                .tmp_options = strs->tmp_options,
                .root_proc = strs->root_proc,
                .dev_sources = { dev_nodes[0], dev_nodes[1], dev_nodes[2] },
                .dev_targets = { strs->dev_targets[0], strs->dev_targets[1], strs->dev_targets[2] },
                .support_source = strs->support_source,
                .support_target = strs->support_target,
                .packages_fd = packages_fd,
                .packages_target = strs->packages_target,
                .time_namespace = sb->no_time_namespace == 0,
                .clock_start_nsec = p->clock_start_nsec,
                .uid = p->lease->uid,
                .gid = p->lease->uid,
                .no_caps = sb->no_caps,
                .cpu_seconds = p->cpu_limit_usec / 1000000,
                .open_files = cfg->open_files_max,
                .tasks = cfg->tasks_max,
                .file_size = cfg->tmp_size,
                .exec_stage = exec_stage,
                .exec_path = strs->exec_path,
                .argv = argv,
                .envp = strs->envp,
                .sync_fd = pipes->fds[PIPE_SYNC][0],
                .status_fd = pipes->fds[PIPE_STATUS][1],
                .code_fd = pipes->fds[PIPE_CODE][0],
                .filter_fd = pipes->fds[PIPE_FILTER][0],
                .ack_fd = pipes->fds[PIPE_ACK][1],
                .ready_fd = pipes->fds[PIPE_READY][1],
                .stdout_fd = pipes->fds[PIPE_STDOUT][1],
                .stderr_fd = pipes->fds[PIPE_STDERR][1],
                .proxy_sock = proxy_sock,
                .netns_template_fd = sb->netns_template_fd,
        };
}

/* Step 3: the child, in fresh namespaces (born in its cgroup when it can be, clone_child()). Every run
 * gets its own network namespace: empty, or with network only the egress proxy; made by the child from
 * the template when there is one (netns-template.h), else by the clone. The parent keeps its own ends of
 * the pipes, in p; the child's ends are closed. */
static int spawn(Sandbox *sb, PreparedRun *p, const RunPlan *plan, Pipes *pipes, bool *ret_born_in_cgroup,
                 RunFailure *reterr) {
        unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                              (plan->netns_template_fd >= 0 ? 0 : CLONE_NEWNET);
        _cleanup_close_ int cgroup_fd = p->cg && sb->clone_into_cgroup ? cgroup_run_open(p->cg) : -EBADF;

        p->t_clone = now(CLOCK_MONOTONIC);
        p->pid = clone_child(flags, cgroup_fd, ret_born_in_cgroup);
        if (p->pid < 0) {
                int r = -errno;
                p->pid = 0;
                return fail(reterr, RUN_STEP_SPAWN, r, NULL);
        }
        if (p->pid == 0)
                child_run(plan); /* never returns */

        pipes->fds[PIPE_SYNC][0] = safe_close(pipes->fds[PIPE_SYNC][0]);
        pipes->fds[PIPE_STATUS][1] = safe_close(pipes->fds[PIPE_STATUS][1]);
        pipes->fds[PIPE_CODE][0] = safe_close(pipes->fds[PIPE_CODE][0]);
        pipes->fds[PIPE_FILTER][0] = safe_close(pipes->fds[PIPE_FILTER][0]);
        pipes->fds[PIPE_ACK][1] = safe_close(pipes->fds[PIPE_ACK][1]);
        pipes->fds[PIPE_STDOUT][1] = safe_close(pipes->fds[PIPE_STDOUT][1]);
        pipes->fds[PIPE_STDERR][1] = safe_close(pipes->fds[PIPE_STDERR][1]);
        pipes->fds[PIPE_READY][1] = safe_close(pipes->fds[PIPE_READY][1]);
        p->code_fd = TAKE_FD(pipes->fds[PIPE_CODE][1]);
        p->status_fd = TAKE_FD(pipes->fds[PIPE_STATUS][0]);
        p->ack_fd = TAKE_FD(pipes->fds[PIPE_ACK][0]);
        p->stdout_fd = TAKE_FD(pipes->fds[PIPE_STDOUT][0]);
        p->stderr_fd = TAKE_FD(pipes->fds[PIPE_STDERR][0]);
        p->ready_fd = TAKE_FD(pipes->fds[PIPE_READY][0]);

        p->pidfd = (int) syscall(SYS_pidfd_open, p->pid, 0);
        return p->pidfd < 0 ? fail(reterr, RUN_STEP_SPAWN, -errno, NULL) : 0;
}

/* Step 4: into the scope or cgroup (unless born there), then the child goes on, up to reading its code;
 * with network, the listener it hands over, for the relay. */
static int release(Sandbox *sb, PreparedRun *p, bool born_in_cgroup, const CgroupLimits *limits, int sync_fd,
                   int proxy_parent, RunFailure *reterr) {
        int r;

        p->t_spawned = now(CLOCK_MONOTONIC);
        r = born_in_cgroup ? 0 : attach(sb, p->cg, p->id, p->pid, limits, reterr);
        if (r < 0)
                return r;
        if (!p->cg) { /* best effort: without it the cause of a SIGKILL is inferred */
                p->oom_fd = open_scope_oom_counter(p->pid, p->id, &p->slice_oom_fd);
                if (!sb->scope_oom_counter)
                        p->oom_fd = safe_close(p->oom_fd);
        }
        if (write(sync_fd, "1", 1) != 1)
                return sync_failed(p->status_fd, -errno, reterr);
        if (p->network) {
                r = receive_egress_listener(proxy_parent, &p->egress_listener, reterr);
                if (r < 0)
                        return r;
        }
        p->t_released = now(CLOCK_MONOTONIC);
        return 0;
}

int sandbox_prepare(Sandbox *sb, const RunRequest *req, PreparedRun **ret, RunFailure *reterr) {
        const Config *cfg = sb->cfg;
        _cleanup_(prepared_run_freep) PreparedRun *p = NULL;
        _cleanup_free_ char *root = NULL;
        _cleanup_free_ char **argv = NULL;
        _cleanup_close_ int proxy_parent = -EBADF, proxy_child = -EBADF, packages_fd = -EBADF;
        _cleanup_(plan_strings_done) PlanStrings strs = { 0 };
        _cleanup_(pipes_close) Pipes pipes;
        SeccompProgram *exec_stage = NULL, *final_stage = NULL;
        bool born_in_cgroup = false;
        int r;

        pipes_init(&pipes);
        if (req->language >= sb->n_languages)
                return fail(reterr, RUN_STEP_RUNTIME, -EINVAL, NULL);
        const RunLanguage *lang = &sb->languages[req->language];
        if (req->network && !cfg->enable_network)
                return fail(reterr, RUN_STEP_NETWORK, -EPERM, NULL);

        r = resolve_tree(cfg, lang, &root, reterr);
        if (r >= 0)
                r = sandbox_filters(sb, req->language, req->network, &exec_stage, &final_stage, reterr);
        if (r >= 0)
                r = prepared_run_new(cfg, req, &p, reterr);
        if (r >= 0)
                r = take_packages(cfg, lang, root, p, &packages_fd, reterr);
        if (r < 0)
                return r;
        CgroupLimits limits = {
                .memory_max = p->memory_max,
                .cpu_quota_percent = cfg->cpu_quota_percent,
                .tasks_max = cfg->tasks_max,
        };
        r = take_uid_and_cgroup(sb, p, &limits, reterr);
        if (r < 0)
                return r;

        r = plan_strings_make(cfg, lang, req->network, req->preload, root, p->packages.number > 0, &strs);
        argv = r >= 0 ? argv_make(lang, req->network, strs.exec_path) : NULL;
        if (r >= 0 && !argv)
                r = -ENOMEM;
        if (r < 0)
                return fail(reterr, RUN_STEP_INIT, r, NULL);
        if (req->network) {
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                        return fail(reterr, RUN_STEP_PIPES, -errno, NULL);
                proxy_parent = sv[0];
                proxy_child = sv[1];
        }
        r = pipes_open(&pipes);
        if (r >= 0)
                r = write_filter(pipes.fds[PIPE_FILTER][1], final_stage, p->memory_max, cfg->tmp_size);
        if (r < 0)
                return fail(reterr, RUN_STEP_PIPES, r, NULL);
        pipes.fds[PIPE_FILTER][1] = safe_close(pipes.fds[PIPE_FILTER][1]);

        RunPlan plan = plan_make(sb, p, root, &strs, &pipes, argv, exec_stage, packages_fd, proxy_child);
        r = spawn(sb, p, &plan, &pipes, &born_in_cgroup, reterr);
        proxy_child = safe_close(proxy_child);
        packages_fd = safe_close(packages_fd); /* the child has its own copy */
        if (r >= 0)
                r = release(sb, p, born_in_cgroup, &limits, pipes.fds[PIPE_SYNC][1], proxy_parent, reterr);
        if (r < 0)
                return r; /* prepared_run_free() kills the child: nothing of the user's ran yet */
        *ret = TAKE_PTR(p);
        return 0;
}

/* The OOM kills of a run in a scope, read while systemd has not yet removed it: on each change of the
 * counter file, and last when PID 1 exits. The count is evidence when that last read worked, or when an
 * earlier one already saw a kill. When systemd was faster, the slice's count (v2: the kills of all its
 * runs) is evidence of none if it did not move from the code's hand-over to the exit; else the cause
 * is inferred. */
typedef struct OomWatch {
        uint64_t kills;       /* the most seen */
        bool last_ok;         /* the latest read worked (after the pump: the one at the exit) */
        bool slice_before_ok; /* slice_before was read, before the code was handed over */
        uint64_t slice_before;
        bool slice_quiet; /* the slice's count was the same at the exit: no run in it was OOM-killed */
} OomWatch;

static bool oom_watch_read(int fd, void *userdata) {
        OomWatch *w = userdata;
        uint64_t n;

        w->last_ok = cgroup_read_oom_kills(fd, &n) >= 0;
        if (w->last_ok && n > w->kills)
                w->kills = n;
        return w->last_ok;
}

/* A prepared run that died while it waited (its scope was stopped, it was killed) has read no code: say
 * so, so that the caller makes a fresh one instead of reporting its death as the user's result. */
static int check_prepared_alive(const PreparedRun *p, RunFailure *reterr) {
        struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
        int r;

        if (poll(&pfd, 1, 0) <= 0)
                return 0;
        r = fail(reterr, RUN_STEP_PREPARED, -ESRCH, NULL);
        if (reterr)
                reterr->before_code = true;
        return r;
}

/* Steps 8–9: code in, output out, deadline; then reaps PID 1 whatever the pump's outcome. */
typedef struct RelayStart {
        const Config *cfg;
        PreparedRun *run;
} RelayStart;

/* The run's first connection to its listener (OutputFds.on_connection): the relay, which holds its own
 * copy of the listener from now on. Most code nodes never connect; they cost no relay process, where one
 * started with every run with network took a fork, an exit and a fifth of the runner's CPU per run. */
static int start_relay(void *userdata) {
        RelayStart *s = userdata;
        PreparedRun *p = s->run;
        int r;

        r = egress_start(s->cfg, p->egress_listener, p->id, &p->relay);
        p->egress_listener = safe_close(p->egress_listener);
        return r;
}

static int pump_and_reap(const Config *cfg, PreparedRun *p, const char *code, size_t code_len,
                         uint64_t deadline_usec, OomWatch *oom_watch, OutputReport *ret_rep, int *ret_status,
                         struct rusage *ret_ru) {
        RelayStart relay_start = { .cfg = cfg, .run = p };
        OutputFds ofds = {
                .pidfd = p->pidfd,
                .code_fd = TAKE_FD(p->code_fd),
                .status_fd = TAKE_FD(p->status_fd),
                .ack_fd = TAKE_FD(p->ack_fd),
                .acked = p->acked,
                .ack_usec = p->ack_usec,
                .notify_fd = TAKE_FD(p->notify_fd),
                .refusals = p->refusals,
                .stdout_fd = TAKE_FD(p->stdout_fd),
                .stderr_fd = TAKE_FD(p->stderr_fd),
                .events_fd = p->oom_fd,
                .on_events = p->oom_fd >= 0 ? oom_watch_read : NULL,
                .userdata = oom_watch,
                .listener_fd = p->egress_listener,
                .on_connection = p->egress_listener >= 0 ? start_relay : NULL,
                .connection_userdata = &relay_start,
        };
        uint64_t n;
        int r;

        oom_watch->slice_before_ok = p->slice_oom_fd >= 0 &&
                                     cgroup_read_oom_kills(p->slice_oom_fd, &oom_watch->slice_before) >= 0;
        r = output_pump(&ofds, code, code_len, cfg->output_max, deadline_usec, ret_rep);
        if (wait4(p->pid, ret_status, 0, ret_ru) < 0 && r >= 0)
                r = -errno;
        p->pid = 0;
        oom_watch->slice_quiet = oom_watch->slice_before_ok &&
                                 cgroup_read_oom_kills(p->slice_oom_fd, &n) >= 0 &&
                                 n == oom_watch->slice_before;
        return r;
}

/* A run whose set-up failed, whose final stage was never confirmed, or whose relay could not start has no
 * result to trust: fails (and frees the report) then. */
static int check_code_ran(OutputReport *rep, RunFailure *reterr) {
        int r;

        if (rep->setup_failed) {
                RunStep step = run_step_to_string(rep->failed_step) ? rep->failed_step : RUN_STEP_CHILD;
                int error =
                        rep->failed_error < 0 ? rep->failed_error : -EIO; /* read before the report goes */
                output_report_done(rep);
                r = fail(reterr, step, error, NULL);
                if (reterr)
                        reterr->before_code = true; /* the status pipe closes at execve() */
                return r;
        }
        if (!rep->acked && !rep->timed_out) {
                /* The interpreter ran without the final stage being confirmed: no result is trusted. */
                _cleanup_free_ char *detail = NULL;
                if (asprintf(&detail, "final seccomp stage not confirmed (%s)", rep->err.data) < 0)
                        detail = NULL;
                output_report_done(rep);
                r = fail(reterr, RUN_STEP_ENTER, -EPROTO, detail);
                if (reterr)
                        reterr->before_code = true; /* no final stage, no fd 3: the code was never read */
                return r;
        }
        if (rep->egress_error < 0) {
                /* The relay did not start on the run's first connection: the pump ended the run. */
                r = fail(reterr, RUN_STEP_EGRESS, rep->egress_error, NULL);
                output_report_done(rep);
                return r;
        }
        return 0;
}

/* How far below the CPU-time limit the rusage of a run that RLIMIT_CPU killed may read: a fifth of it, at
 * least 250 ms (see classify()). */
static uint64_t cpu_margin(uint64_t limit_usec) {
        return limit_usec / 5 > 250000 ? limit_usec / 5 : 250000;
}

/* Step 10: classify. The result, exit code and resources of the run, without its text. */
static RunOutput classify(const PreparedRun *p, const OutputReport *rep, const OomWatch *oom_watch,
                          int status, const struct rusage *ru, bool warm) {
        uint64_t oom = 0, peak = 0;
        RunFacts facts;

        if (p->cg)
                (void) cgroup_run_stats(p->cg, &oom, &peak); /* unknown stays 0: a missing file is no OOM */
        else
                oom = oom_watch->kills;
        uint64_t cpu = (uint64_t) ru->ru_utime.tv_sec * 1000000ULL + (uint64_t) ru->ru_utime.tv_usec +
                       (uint64_t) ru->ru_stime.tv_sec * 1000000ULL + (uint64_t) ru->ru_stime.tv_usec;
        facts = (RunFacts){
                .wait_status = status,
                .timed_out = rep->timed_out,
                /* Nothing inside the run's PID namespace can SIGKILL its PID 1; so a SIGKILL we did not
                 * send is the kernel's (RLIMIT_CPU, the OOM killer) or someone's outside the run (an
                 * operator). RLIMIT_CPU only when the CPU time used reached it, within a margin: the
                 * kernel kills on its own clock of the process's CPU, and the rusage we read showed up to
                 * a tenth less on a loaded host (4.5 s for a 5 s limit). The OOM count, where a cgroup shows
                 * it, outranks this (result_classify()); else it is a kill from outside. (SIGXCPU cannot
                 * help: the kernel drops it for the PID 1 of a namespace.) */
                .cpu_limit_hit = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !rep->timed_out &&
                                 !rep->output_truncated &&
                                 cpu + cpu_margin(p->cpu_limit_usec) >= p->cpu_limit_usec,
                .output_truncated = rep->output_truncated,
                .oom_kills = oom,
                .oom_unobservable =
                        !p->cg && !oom_watch->last_ok && oom_watch->kills == 0 && !oom_watch->slice_quiet,
                .seccomp_killed = rep->seccomp_killed,
        };

        return (RunOutput){
                .result = result_classify(&facts),
                .exit_code = result_exit_code(&facts),
                .stdout_truncated = rep->out.truncated,
                .stderr_truncated = rep->err.truncated,
                .cpu_usec = cpu,
                .memory_peak = peak > 0 ? peak : (uint64_t) ru->ru_maxrss * 1024ULL,
                .uid = p->lease->uid,
                .warm = warm,
                .refusals = rep->refusals,
        };
}

/* Fills the output's text and error message, and frees the report. The API returns JSON text: bytes
 * that are not UTF-8 (or a sequence the cap cut) become U+FFFD. */
static int output_text(OutputReport *rep, int status, RunOutput *out) {
        _cleanup_free_ char *detail = NULL;
        int r;

        r = utf8_sanitize(rep->out.data, rep->out.len, &out->stdout_text, &out->stdout_len);
        if (r >= 0)
                r = utf8_sanitize(rep->err.data, rep->err.len, &out->stderr_text, &out->stderr_len);
        output_report_done(rep);
        if (r >= 0)
                r = refusals_format(&out->refusals, &detail); /* the calls refused, named */
        if (r < 0)
                return r;
        if (out->result == RUN_RESULT_SECCOMP && out->refusals.killed_nr < 0)
                /* No call was named: the filter itself killed it, which it does only for a call of another
                 * ABI (x32, i386). The run cannot send its PID 1 a signal that kills it. */
                return result_format_error_detail(out->result, out->exit_code,
                                                  WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                                                  "error: killed by SIGSYS: a system call of another ABI "
                                                  "(x32 or i386) is never allowed "
                                                  "in this sandbox\n",
                                                  out->stderr_text, &out->error);
        return result_format_error_detail(out->result, out->exit_code,
                                          WIFSIGNALED(status) ? WTERMSIG(status) : 0, detail,
                                          out->stderr_text, &out->error);
}

/* The instants the phases are computed from, kept once the report and the prepared run are gone. */
typedef struct RunStamps {
        uint64_t start; /* of execute(): a warm run's clock starts with its request (its code) */
        uint64_t p_start, t_uid, t_cgroup, t_clone, t_spawned, t_released; /* of the prepared run */
        uint64_t root, sync, creds, ack, first_output, exit;               /* of the report */
} RunStamps;

static RunStamps stamps_take(const PreparedRun *p, const OutputReport *rep, uint64_t start) {
        return (RunStamps){
                .start = start,
                .p_start = p->start,
                .t_uid = p->t_uid,
                .t_cgroup = p->t_cgroup,
                .t_clone = p->t_clone,
                .t_spawned = p->t_spawned,
                .t_released = p->t_released,
                .root = rep->child_root_usec,
                .sync = rep->child_sync_usec,
                .creds = rep->child_creds_usec,
                .ack = rep->ack_usec,
                .first_output = rep->first_output_usec,
                .exit = rep->exit_usec,
        };
}

static void output_timing(const RunStamps *s, bool warm, uint64_t end, RunOutput *out) {
        /* A warm run's set-up happened before its request, and is reported in the phases all the same.
         * A cold run's user code starts with the final stage. */
        uint64_t code_start = warm ? s->start : s->ack;

        out->duration_usec = end - (warm ? s->start : s->p_start);
        out->timing = (RunTiming){
                .uid = s->t_uid - s->p_start,
                .cgroup = s->t_cgroup - s->t_uid,
                .spawn = s->t_spawned - s->t_clone,
                .attach = s->t_released - s->t_spawned,
                .root = s->root > s->t_clone ? s->root - s->t_clone : 0,
                .creds_seccomp = s->creds > s->sync && s->sync > 0 ? s->creds - s->sync : 0,
                .interpreter = s->ack > s->creds && s->creds > 0 ? s->ack - s->creds : 0,
                .first_output =
                        s->first_output > code_start && code_start > 0 ? s->first_output - code_start : 0,
                .user_code = s->exit > code_start && code_start > 0 ? s->exit - code_start : 0,
                .cleanup = s->exit > 0 && end > s->exit ? end - s->exit : 0,
        };
}

static int execute(Sandbox *sb, PreparedRun *p, const char *code, size_t code_len, uint64_t timeout_usec,
                   bool warm, RunOutput *ret, RunFailure *reterr) {
        const Config *cfg = sb->cfg;
        _cleanup_(prepared_run_freep) PreparedRun *owned = p;
        OutputReport rep = { 0 };
        uint64_t start, timeout;
        struct rusage ru;
        OomWatch oom_watch = { 0 };
        int status, r;

        timeout = timeout_usec > 0 ? timeout_usec : cfg->worker_timeout_usec;
        start = now(CLOCK_MONOTONIC);

        if (warm) {
                r = check_prepared_alive(p, reterr);
                if (r < 0)
                        return r;
        }

        r = pump_and_reap(cfg, p, code, code_len, (warm ? start : p->start) + timeout, &oom_watch, &rep,
                          &status, &ru);
        if (r < 0)
                return fail(reterr, RUN_STEP_PUMP, r, NULL);
        r = check_code_ran(&rep, reterr);
        if (r < 0)
                return r;

        RunOutput out = classify(p, &rep, &oom_watch, status, &ru, warm);
        memcpy(out.id, p->id, sizeof(out.id));
        RunStamps stamps = stamps_take(p, &rep, start);
        r = output_text(&rep, status, &out);
        if (r < 0) {
                run_output_done(&out);
                return fail(reterr, RUN_STEP_RESULT, r, NULL);
        }

        /* Step 11: the relay, the cgroup, then the UID. */
        out.egress_denials = egress_denials(p->relay); /* 0 without network */
        out.cpu_usec += egress_cpu_usec(p->relay); /* the relay serves this run only: its CPU is the run's */
        owned = prepared_run_free(TAKE_PTR(owned));
        output_timing(&stamps, warm, now(CLOCK_MONOTONIC), &out);
        *ret = out;
        return 0;
}

int prepared_run_execute(Sandbox *sb, PreparedRun *p, const char *code, size_t code_len,
                         uint64_t timeout_usec, RunOutput *ret, RunFailure *reterr) {
        return execute(sb, p, code, code_len, timeout_usec, /* warm= */ true, ret, reterr);
}

int sandbox_run(Sandbox *sb, const RunRequest *req, RunOutput *ret, RunFailure *reterr) {
        PreparedRun *p = NULL;
        int r;

        r = sandbox_prepare(sb, req, &p, reterr);
        if (r < 0)
                return r;
        return execute(sb, p, req->code, req->code_len, req->timeout_usec, /* warm= */ false, ret, reterr);
}

void run_output_record(const RunOutput *out, const char *language, RunRecord *ret) {
        *ret = (RunRecord){
                .id = out->id,
                .language = language,
                .result = run_result_to_string(out->result),
                .exit_code = out->exit_code,
                .duration_usec = out->duration_usec,
                .cpu_usec = out->cpu_usec,
                .memory_peak = out->memory_peak,
                .uid = out->uid,
                .stdout_bytes = out->stdout_len,
                .stderr_bytes = out->stderr_len,
                .egress_denials = out->egress_denials,
                .warm = out->warm,
                .phase_uid = out->timing.uid,
                .phase_cgroup = out->timing.cgroup,
                .phase_spawn = out->timing.spawn,
                .phase_attach = out->timing.attach,
                .phase_root = out->timing.root,
                .phase_creds_seccomp = out->timing.creds_seccomp,
                .phase_interpreter = out->timing.interpreter,
                .phase_user_code = out->timing.user_code,
                .phase_cleanup = out->timing.cleanup,
        };
}

void run_output_done(RunOutput *out) {
        free(out->stdout_text);
        free(out->stderr_text);
        free(out->error);
        *out = (RunOutput){ 0 };
}
