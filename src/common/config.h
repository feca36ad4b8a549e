#pragma once
/* config: owns the effective configuration (struct Config) and its defaults. Everything else reads a
 * const Config * handed to it; nothing keeps a copy of a value it could read from there. */

#include <stdbool.h>
#include <stdint.h>

typedef struct Config {
        /* upstream dify-sandbox keys (DESIGN §1) */
        char *api_key;                /* app.key */
        char *api_key_digest;         /* app.key_digest: what a worker holds instead (key-digest.h) */
        uint16_t port;                /* app.port */
        bool debug;                   /* app.debug */
        uint32_t max_workers;         /* concurrent runs */
        uint32_t max_requests;        /* requests in flight */
        uint64_t worker_timeout_usec; /* wall clock of one run */
        char *python_path;            /* interpreter on the host; its runtime tree holds the same path */
        char *nodejs_path;
        char *python_pip_mirror_url;
        uint64_t python_deps_update_interval_usec;
        bool enable_network;
        bool enable_preload;
        char **allowed_syscalls; /* NULL-terminated syscall names added to both stages */
        char *proxy_socks5, *proxy_http, *proxy_https, *proxy_no_proxy;
        char *log_path;          /* accepted from upstream files and shown; we log to journald */
        char **allowed_env_vars; /* NULL-terminated: variables of our environment runs get too */

        /* ours (difysandbox.conf(5)) */
        uint64_t memory_max;         /* bytes, cgroup memory limit of one run */
        uint32_t cpu_quota_percent;  /* percent of one CPU, as CPUQuota= */
        uint64_t cpu_time_usec;      /* RLIMIT_CPU of one run */
        uint32_t tasks_max;          /* processes and threads of one run (pids.max and RLIMIT_NPROC) */
        uint64_t output_max;         /* bytes of stdout and of stderr kept; more ends the run */
        uint64_t code_max;           /* bytes of code accepted (preload included); the body is 64K more */
        uint64_t queue_timeout_usec; /* how long an admitted request waits for a worker slot */
        uint64_t tmp_size;           /* bytes of the run's /tmp tmpfs */
        uint32_t open_files_max;     /* RLIMIT_NOFILE */
        uint32_t uid_min, uid_max;   /* the UID pool, inclusive */
        bool prewarm;                /* the runner keeps a warm pool of prepared runs */
        uint32_t pool_python3;       /* prepared runs the pool keeps per language */
        uint32_t pool_nodejs;
        char **preload_python3; /* NULL-terminated modules a prepared interpreter imports */
        char **preload_nodejs;
        char *runner_socket; /* where workers reach difysandbox-runner (AF_UNIX, SOCK_SEQPACKET) */
        char *worker_user;   /* the unprivileged user HTTP workers run as */
        char *state_dir;     /* /run/difysandbox: UID locks, admission, stats */
        char *runtime_dir;   /* /var/lib/difysandbox: runtime trees per language */
        char *enter_library; /* the preloaded final seccomp stage on the host */

        /* ours: dependency generations (src/manager, DESIGN §4) */
        char *python_requirements; /* upstream's python-requirements.txt; missing = empty */
        char *nodejs_packages;     /* npm specs, one per line; missing = empty */
        char *npm_registry;        /* npm's registry; empty: npm's own default */

        /* ours: the egress relay of runs with network (src/egress, difysandbox.conf(5)) */
        char **egress_allow;               /* NULL-terminated rules, syntax of src/egress/egress-policy.h */
        char **egress_deny;                /* the same */
        uint32_t egress_max_connections;   /* connections of one run's relay at once */
        uint64_t egress_max_bytes;         /* bytes of one run's relay, both directions summed */
        uint64_t egress_idle_timeout_usec; /* a relayed connection without traffic this long is closed */
} Config;

/* Fills cfg with the documented defaults (difysandbox.conf(5)). Returns -ENOMEM. */
int config_init_defaults(Config *cfg);
void config_done(Config *cfg);
