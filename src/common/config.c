/* config: see config.h. */

#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "strv.h"

#ifndef LIBEXECDIR
#define LIBEXECDIR "/usr/libexec"
#endif
#ifndef PKGLIBDIR
#define PKGLIBDIR "/usr/lib/difysandbox"
#endif

/* A NULL-terminated list of copies of the arguments, NULL-terminated too. */
static char **strv_new(const char *a, const char *b, const char *c) {
        const char *items[] = { a, b, c };
        char **l = calloc(ELEMENTSOF(items) + 1, sizeof(char *));

        if (!l)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(items); i++)
                if (!(l[i] = strdup(items[i]))) {
                        (void) strv_free(l);
                        return NULL;
                }
        return l;
}

int config_init_defaults(Config *cfg) {
        *cfg = (Config){
                .port = 8194,
                .max_workers = 4,
                .max_requests = 50,
                .worker_timeout_usec = 5ULL * 1000000ULL,
                .python_deps_update_interval_usec = 30ULL * 60ULL * 1000000ULL,
                .enable_network = true,
                .memory_max = 512ULL << 20,
                .cpu_quota_percent = 100,
                .cpu_time_usec = 5ULL * 1000000ULL,
                .tasks_max = 64,
                .output_max = 4ULL << 20,
                .code_max = 16ULL << 20, /* extracted document text in a Dify input: 10 MB is common */
                /* below Dify's 60 s read timeout together with worker_timeout, so that Dify gets an
                 * answer it retries (503) rather than a read timeout */
                .queue_timeout_usec = 50ULL * 1000000ULL,
                .tmp_size = 64ULL << 20,
                .open_files_max = 256,
                .uid_min = 10000,
                .uid_max = 10999,
                .prewarm = true,
                .pool_python3 = 2,
                .pool_nodejs = 1,
                .egress_max_connections = 16,
                .egress_max_bytes = 64ULL << 20,
                .egress_idle_timeout_usec = 30ULL * 1000000ULL,
        };
        /* No key until one is configured: no request is authorised (api.c), so that no host ever serves
         * with a key everybody knows (upstream's "dify-sandbox" works only when written out). */
        cfg->api_key = NULL;
        cfg->api_key_digest = NULL;
        cfg->python_path = strdup("/usr/bin/python3");
        cfg->nodejs_path = strdup("/usr/bin/node");
        cfg->python_pip_mirror_url = strdup("");
        cfg->allowed_syscalls = calloc(1, sizeof(char *));
        cfg->proxy_socks5 = strdup("");
        cfg->proxy_http = strdup("");
        cfg->proxy_https = strdup("");
        cfg->proxy_no_proxy = strdup("");
        cfg->log_path = strdup("");
        cfg->allowed_env_vars = calloc(1, sizeof(char *));
        cfg->state_dir = strdup("/run/difysandbox");
        cfg->runtime_dir = strdup("/var/lib/difysandbox");
        cfg->enter_library = strdup(PKGLIBDIR "/libdifysandbox-enter.so");
        cfg->python_requirements = strdup("/etc/difysandbox/python-requirements.txt");
        cfg->nodejs_packages = strdup("/etc/difysandbox/nodejs-packages.txt");
        cfg->npm_registry = strdup("");
        cfg->egress_allow = calloc(1, sizeof(char *));
        cfg->egress_deny = calloc(1, sizeof(char *));
        /* What a Dify code node most often imports: its jinja2 template transform, and the data-science
         * pair whose import alone takes a third of a second (docs/performance.md). */
        cfg->preload_python3 = strv_new("jinja2", "numpy", "pandas");
        cfg->preload_nodejs = calloc(1, sizeof(char *));
        cfg->runner_socket = strdup("/run/difysandbox/runner.sock");
        cfg->worker_user = strdup("difysandbox-worker");
        if (!cfg->python_path || !cfg->nodejs_path || !cfg->python_pip_mirror_url ||
            !cfg->allowed_syscalls || !cfg->proxy_socks5 || !cfg->proxy_http || !cfg->proxy_https ||
            !cfg->proxy_no_proxy || !cfg->log_path || !cfg->allowed_env_vars || !cfg->state_dir ||
            !cfg->runtime_dir || !cfg->enter_library || !cfg->python_requirements || !cfg->nodejs_packages ||
            !cfg->npm_registry || !cfg->egress_allow || !cfg->egress_deny || !cfg->preload_python3 ||
            !cfg->preload_nodejs || !cfg->runner_socket || !cfg->worker_user) {
                config_done(cfg);
                return -ENOMEM;
        }
        return 0;
}

void config_done(Config *cfg) {
        free(cfg->api_key);
        free(cfg->api_key_digest);
        free(cfg->python_path);
        free(cfg->nodejs_path);
        free(cfg->python_pip_mirror_url);
        (void) strv_free(cfg->allowed_syscalls);
        free(cfg->proxy_socks5);
        free(cfg->proxy_http);
        free(cfg->proxy_https);
        free(cfg->proxy_no_proxy);
        free(cfg->log_path);
        (void) strv_free(cfg->allowed_env_vars);
        free(cfg->state_dir);
        free(cfg->runtime_dir);
        free(cfg->enter_library);
        free(cfg->python_requirements);
        free(cfg->nodejs_packages);
        free(cfg->npm_registry);
        (void) strv_free(cfg->egress_allow);
        (void) strv_free(cfg->egress_deny);
        (void) strv_free(cfg->preload_python3);
        (void) strv_free(cfg->preload_nodejs);
        free(cfg->runner_socket);
        free(cfg->worker_user);
        *cfg = (Config){ 0 };
}
