/* test-config-file: src/config/config-file.c. An upstream dify-sandbox config.yaml loads with every value
 * where upstream puts it; drop-ins apply in strcmp() order and the environment wins over every file; each
 * bad value is refused with the exact message an operator sees (file, line, key, value, reason); and what
 * config_format() prints loads back to the same Config. Every test works in its own mkdtemp() directory
 * and never reads /etc/difysandbox. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "common/config.h"
#include "config/config-file.h"

/* The upstream example config.yaml (langgenius/dify-sandbox conf/config.yaml), with its comments. */
static const char upstream_yaml[] =
        "app:\n"
        "  port: 8194\n"
        "  debug: True\n"
        "  key: dify-sandbox\n"
        "max_workers: 4\n"
        "max_requests: 50\n"
        "worker_timeout: 5\n"
        "python_path: %s/bin/python3\n" /* upstream: /usr/local/bin; it must exist */
        "python_lib_path:\n"
        "  - \"/usr/local/lib/python3.10\"\n"
        "  - \"/usr/lib/python3.10\"\n"
        "  - \"/usr/lib/python3\"\n"
        "  - \"/usr/lib/x86_64-linux-gnu\"\n"
        "  - \"/etc/ssl/certs/ca-certificates.crt\"\n"
        "  - \"/etc/nsswitch.conf\"\n"
        "  - \"/etc/hosts\"\n"
        "  - \"/etc/resolv.conf\"\n"
        "  - \"/run/systemd/resolve/stub-resolv.conf\"\n"
        "  - \"/run/resolvconf/resolv.conf\"\n"
        "  - \"/etc/localtime\"\n"
        "  - \"/usr/share/zoneinfo\"\n"
        "  - \"/etc/timezone\"\n"
        "python_pip_mirror_url: https://pypi.tuna.tsinghua.edu.cn/simple\n"
        "python_deps_update_interval: 30m\n"
        "nodejs_path: %s/bin/node\n"
        "enable_network: True # please make sure there is no network risk in your environment\n"
        "enable_preload: False # please keep it as False for security purposes\n"
        "allowed_syscalls: # please leave it empty if you have no idea how seccomp works\n"
        "  - %d\n"
        "  - %d\n"
        "proxy:\n"
        "  socks5: 'socks5://127.0.0.1:1080'\n"
        "  http: 'http://127.0.0.1:3128'\n"
        "  https: 'http://127.0.0.1:3129'\n";

/* Upstream lists syscalls by number of the architecture it runs on: read and write here. */
#if defined(__x86_64__)
#define NR_READ 0
#define NR_WRITE 1
#elif defined(__aarch64__)
#define NR_READ 63
#define NR_WRITE 64
#else
#define NR_READ seccomp_syscall_resolve_name("read")
#define NR_WRITE seccomp_syscall_resolve_name("write")
#endif

typedef struct TestDir {
        char path[sizeof("/tmp/test-config-file-XXXXXX")];
} TestDir;

static int setup_dir(void **state) {
        TestDir *d = calloc(1, sizeof(TestDir));

        assert_non_null(d);
        strcpy(d->path, "/tmp/test-config-file-XXXXXX");
        assert_non_null(mkdtemp(d->path));
        /* Interpreters that exist, for python_path and nodejs_path (config_load() checks them). */
        for (size_t i = 0; i < 4; i++) {
                static const char *const names[] = { "python3", "node", "python3.11", "nodejs" };
                char *path;
                int fd;

                assert_true(asprintf(&path, "%s/bin", d->path) > 0);
                (void) mkdir(path, 0755);
                free(path);
                assert_true(asprintf(&path, "%s/bin/%s", d->path, names[i]) > 0);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
                assert_true(fd >= 0);
                assert_int_equal(close(fd), 0);
                free(path);
        }
        *state = d;
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int teardown_dir(void **state) {
        TestDir *d = *state;

        assert_int_equal(nftw(d->path, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(d);
        return 0;
}

/* Writes dir/name (printf-style content) and returns its path. */
static char *__attribute__((format(printf, 3, 4)))
write_file(const char *dir, const char *name, const char *format, ...) {
        char *path;
        va_list ap;
        FILE *f;

        assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        va_start(ap, format);
        assert_true(vfprintf(f, format, ap) >= 0);
        va_end(ap);
        assert_int_equal(fclose(f), 0);
        return path;
}

static char *make_dir(const char *dir, const char *name) {
        char *path;

        assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
        assert_int_equal(mkdir(path, 0755), 0);
        return path;
}

/* Defaults, then config_load() of main with no drop-ins unless given, and env. */
static int load(Config *cfg, const char *main_file, const char *dropin_dir, char **env, ConfigError *err) {
        assert_int_equal(config_init_defaults(cfg), 0);
        return config_load(cfg, main_file, dropin_dir ? dropin_dir : "", env, err);
}

static void assert_syscalls(char **l, const char *const *expected) {
        size_t i = 0;

        assert_non_null(l);
        for (; expected[i]; i++) {
                assert_non_null(l[i]);
                assert_string_equal(l[i], expected[i]);
        }
        assert_null(l[i]);
}

static void test_upstream_config_loads(void **state) {
        TestDir *d = *state;
        char *path = write_file(d->path, "config.yaml", upstream_yaml, d->path, d->path, NR_READ, NR_WRITE);
        ConfigError err = { 0 };
        Config cfg, defaults;

        assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
        assert_null(err.message);

        assert_int_equal(cfg.port, 8194);
        assert_true(cfg.debug);
        assert_string_equal(cfg.api_key, "dify-sandbox");
        assert_int_equal(cfg.max_workers, 4);
        assert_int_equal(cfg.max_requests, 50);
        assert_true(cfg.worker_timeout_usec == UINT64_C(5000000));
        assert_true(strncmp(cfg.python_path, d->path, strlen(d->path)) == 0);
        assert_string_equal(cfg.python_path + strlen(d->path), "/bin/python3");
        assert_string_equal(cfg.python_pip_mirror_url, "https://pypi.tuna.tsinghua.edu.cn/simple");
        assert_true(cfg.python_deps_update_interval_usec == UINT64_C(30) * 60 * 1000000);
        assert_true(strncmp(cfg.nodejs_path, d->path, strlen(d->path)) == 0);
        assert_string_equal(cfg.nodejs_path + strlen(d->path), "/bin/node");
        assert_true(cfg.enable_network);
        assert_false(cfg.enable_preload);
        assert_syscalls(cfg.allowed_syscalls, (const char *const[]){ "read", "write", NULL });
        assert_string_equal(cfg.proxy_socks5, "socks5://127.0.0.1:1080");
        assert_string_equal(cfg.proxy_http, "http://127.0.0.1:3128");
        assert_string_equal(cfg.proxy_https, "http://127.0.0.1:3129");

        /* Our keys were not in the file: they keep their defaults. */
        assert_int_equal(config_init_defaults(&defaults), 0);
        assert_true(cfg.memory_max == defaults.memory_max);
        assert_int_equal(cfg.cpu_quota_percent, defaults.cpu_quota_percent);
        assert_int_equal(cfg.uid_min, defaults.uid_min);
        assert_int_equal(cfg.uid_max, defaults.uid_max);
        assert_string_equal(cfg.state_dir, defaults.state_dir);
        config_done(&defaults);

        config_done(&cfg);
        free(path);
}

/* Upstream's own file leaves allowed_syscalls and python_lib_path empty ("key:" with only a comment), and
 * leaves empty paths and interval to mean the defaults. */
static void test_upstream_empty_values(void **state) {
        TestDir *d = *state;
        char *path = write_file(d->path, "config.yaml",
                                "allowed_syscalls: # please leave it empty\n"
                                "python_lib_path:\n"
                                "python_path: ''\n"
                                "nodejs_path:\n"
                                "python_deps_update_interval: \"\"\n"
                                "python_pip_mirror_url:\n"
                                "proxy:\n");
        ConfigError err = { 0 };
        Config cfg, defaults;

        assert_int_equal(config_init_defaults(&defaults), 0);
        assert_int_equal(config_init_defaults(&cfg), 0);
        /* Start from other values, so that the file visibly sets them. */
        free(cfg.python_path);
        cfg.python_path = strdup("/opt/python3");
        cfg.python_deps_update_interval_usec = 1;
        free(cfg.allowed_syscalls);
        cfg.allowed_syscalls = calloc(2, sizeof(char *));
        cfg.allowed_syscalls[0] = strdup("getpid");
        free(cfg.python_pip_mirror_url);
        cfg.python_pip_mirror_url = strdup("https://mirror.example/simple");

        assert_int_equal(config_load(&cfg, path, "", NULL, &err), 0);
        assert_null(cfg.allowed_syscalls[0]);
        assert_string_equal(cfg.python_path, defaults.python_path);
        assert_string_equal(cfg.nodejs_path, defaults.nodejs_path);
        assert_true(cfg.python_deps_update_interval_usec == defaults.python_deps_update_interval_usec);
        assert_string_equal(cfg.python_pip_mirror_url, "");

        config_done(&defaults);
        config_done(&cfg);
        free(path);
}

static void test_missing_files_are_fine(void **state) {
        TestDir *d = *state;
        char *main_file, *dropins;
        ConfigError err = { 0 };
        Config cfg;

        assert_true(asprintf(&main_file, "%s/none.yaml", d->path) > 0);
        assert_true(asprintf(&dropins, "%s/none.d", d->path) > 0);
        assert_int_equal(load(&cfg, main_file, dropins, NULL, &err), 0);
        assert_null(err.message);
        assert_int_equal(cfg.max_workers, 4);
        config_done(&cfg);
        free(main_file);
        free(dropins);
}

static void test_unreadable_main_file(void **state) {
        TestDir *d = *state;
        char *dir = make_dir(d->path, "config.yaml"), *expected;
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, dir, NULL, NULL, &err), -EISDIR);
        assert_true(asprintf(&expected, "%s: cannot read: Is a directory", dir) > 0);
        assert_string_equal(err.message, expected);

        config_error_done(&err);
        assert_null(err.message);
        config_done(&cfg);
        free(expected);
        free(dir);
}

static void test_dropin_order(void **state) {
        TestDir *d = *state;
        char *main_file =
                write_file(d->path, "config.yaml", "max_workers: 2\nmemory_max: 1G\nmax_requests: 1\n");
        char *dropins = make_dir(d->path, "config.d"), *files[7];
        ConfigError err = { 0 };
        Config cfg;

        /* Written out of order: the names decide, by strcmp(), so "10-" sorts before "9-". */
        files[0] = write_file(dropins, "20-b.yaml", "max_workers: 5\n");
        files[1] = write_file(dropins, "10-a.yaml", "max_workers: 3\ntasks_max: 100\nmax_requests: 10\n");
        files[2] = write_file(dropins, "9-z.yaml", "max_requests: 9\n");
        /* Not *.yaml, or hidden: never read, although they would be refused. */
        files[3] = write_file(dropins, "30-c.yml", "max_workers: 0\n");
        files[4] = write_file(dropins, "README", "not: [yaml\n");
        files[5] = write_file(dropins, ".40-hidden.yaml", "max_workers: 0\n");
        files[6] = write_file(dropins, "50-d.yaml.disabled", "max_workers: 0\n");

        assert_int_equal(load(&cfg, main_file, dropins, NULL, &err), 0);
        assert_null(err.message);
        assert_int_equal(cfg.max_workers, 5);             /* main 2, 10-a 3, 20-b 5 */
        assert_int_equal(cfg.tasks_max, 100);             /* only 10-a */
        assert_int_equal(cfg.max_requests, 9);            /* main 1, 10-a 10, 9-z 9 */
        assert_true(cfg.memory_max == UINT64_C(1) << 30); /* only main */
        config_done(&cfg);

        free(main_file);
        free(dropins);
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
                free(files[i]);
}

/* A drop-in is refused like the main file, under its own name. */
static void test_dropin_error_names_dropin(void **state) {
        TestDir *d = *state;
        char *dropins = make_dir(d->path, "config.d"), *bad, *expected;
        ConfigError err = { 0 };
        Config cfg;

        bad = write_file(dropins, "10-bad.yaml", "# limits\ntasks_max: 4\n");
        assert_int_equal(load(&cfg, "/nonexistent/config.yaml", dropins, NULL, &err), -EINVAL);
        assert_true(asprintf(&expected, "%s:2: tasks_max: '4': must be at least 8", bad) > 0);
        assert_string_equal(err.message, expected);

        config_error_done(&err);
        config_done(&cfg);
        free(expected);
        free(bad);
        free(dropins);
}

/* Every error of every source is collected: the main file's, a drop-in's, the environment's; the first
 * is the message, and the UID range is not judged on a refused configuration. */
static void test_every_error_is_collected(void **state) {
        TestDir *d = *state;
        char *dropins = make_dir(d->path, "config.d"), *main_file, *bad, *expected;
        char *env[] = { (char *) "MAX_WORKERS=0", NULL };
        ConfigError err = { 0 };
        Config cfg;

        main_file = write_file(d->path, "config.yaml",
                               "app:\n  port: 0\nnope: [1, {a: b}]\nmax_requests:\n  x: 1\ntasks_max: 4\n"
                               "uid_min: 20000\n");
        bad = write_file(dropins, "10-bad.yaml", "memory_max: 1K\n");
        assert_int_equal(load(&cfg, main_file, dropins, env, &err), -EINVAL);
        assert_int_equal(err.n, 6);
        assert_true(asprintf(&expected,
                             "%1$s:2: app.port: '0': must be between 1 and 65535\n"
                             "%1$s:3: nope: unknown key\n"
                             "%1$s:5: max_requests: expected a single value, got a mapping\n"
                             "%1$s:6: tasks_max: '4': must be at least 8\n"
                             "%2$s:1: memory_max: '1K': must be at least 16M\n",
                             main_file, bad) > 0);
        assert_non_null(err.all);
        assert_true(strncmp(err.all, expected, strlen(expected)) == 0);
        assert_string_equal(err.all + strlen(expected),
                            "environment variable MAX_WORKERS: max_workers: '0': must be at least 1\n");
        assert_true(strncmp(err.message, expected, strcspn(expected, "\n")) == 0);
        assert_int_equal(strlen(err.message), strcspn(expected, "\n"));

        config_error_done(&err);
        assert_null(err.message);
        assert_null(err.all);
        config_done(&cfg);
        free(expected);
        free(bad);
        free(main_file);
        free(dropins);
}

static void test_env_overrides_win(void **state) {
        TestDir *d = *state;
        char *main_file =
                write_file(d->path, "config.yaml", upstream_yaml, d->path, d->path, NR_READ, NR_WRITE);
        char *dropins = make_dir(d->path, "config.d");
        char *dropin = write_file(dropins, "10-x.yaml", "max_workers: 6\nmemory_max: 2G\n");
        char *python_env, *node_env, *syscalls_env;

        assert_true(asprintf(&python_env, "PYTHON_PATH=%s/bin/python3.11", d->path) > 0);
        assert_true(asprintf(&node_env, "NODEJS_PATH=%s/bin/nodejs", d->path) > 0);
        /* A number is the host architecture's: write's, so that the list below holds on each. */
        assert_true(asprintf(&syscalls_env, "ALLOWED_SYSCALLS=getpid, %d", (int) NR_WRITE) > 0);
        char *env[] = {
                "PATH=/usr/bin",
                "API_KEY=from-env",
                "SANDBOX_PORT=9000",
                "MAX_WORKERS=9",
                "MAX_REQUESTS=99",
                "WORKER_TIMEOUT=2.5",
                "ENABLE_NETWORK=false",
                "ENABLE_PRELOAD=yes",
                syscalls_env,
                "PIP_MIRROR_URL=", /* empty: upstream keeps the file's value */
                "PYTHON_DEPS_UPDATE_INTERVAL=1h",
                "HTTP_PROXY=http://proxy:8080",
                "HTTPS_PROXY=http://proxy:8443",
                "SOCKS5_PROXY=",
                python_env,
                node_env,
                "DIFYSANDBOX_MEMORY_MAX=1G",
                "DIFYSANDBOX_CPU_QUOTA=250",
                "DIFYSANDBOX_CPU_TIME=10s",
                "DIFYSANDBOX_TASKS_MAX=128",
                "DIFYSANDBOX_OUTPUT_MAX=8M",
                "DIFYSANDBOX_CODE_MAX=2M",
                "DIFYSANDBOX_TMP_SIZE=128M",
                "DIFYSANDBOX_QUEUE_TIMEOUT=20s",
                "DIFYSANDBOX_OPEN_FILES_MAX=512",
                "DIFYSANDBOX_UID_MIN=20000",
                "DIFYSANDBOX_UID_MAX=20099",
                "DIFYSANDBOX_STATE_DIR=/run/sb",
                "DIFYSANDBOX_RUNTIME_DIR=/srv/sb",
                "DIFYSANDBOX_ENTER_LIBRARY=/opt/lib/enter.so",
                "MAX_WORKERS=1", /* as getenv(): the first one counts */
                NULL,
        };
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, main_file, dropins, env, &err), 0);
        assert_null(err.message);
        assert_string_equal(cfg.api_key, "from-env");
        assert_int_equal(cfg.port, 9000);
        assert_int_equal(cfg.max_workers, 9);
        assert_int_equal(cfg.max_requests, 99);
        assert_true(cfg.worker_timeout_usec == UINT64_C(2500000));
        assert_false(cfg.enable_network);
        assert_true(cfg.enable_preload);
        assert_syscalls(cfg.allowed_syscalls, (const char *const[]){ "getpid", "write", NULL });
        assert_string_equal(cfg.python_pip_mirror_url, "https://pypi.tuna.tsinghua.edu.cn/simple");
        assert_true(cfg.python_deps_update_interval_usec == UINT64_C(3600) * 1000000);
        assert_string_equal(cfg.proxy_http, "http://proxy:8080");
        assert_string_equal(cfg.proxy_https, "http://proxy:8443");
        assert_string_equal(cfg.proxy_socks5, "socks5://127.0.0.1:1080");
        assert_string_equal(cfg.python_path, python_env + strlen("PYTHON_PATH="));
        assert_string_equal(cfg.nodejs_path, node_env + strlen("NODEJS_PATH="));
        assert_true(cfg.memory_max == UINT64_C(1) << 30);
        assert_int_equal(cfg.cpu_quota_percent, 250);
        assert_true(cfg.cpu_time_usec == UINT64_C(10000000));
        assert_int_equal(cfg.tasks_max, 128);
        assert_true(cfg.output_max == UINT64_C(8) << 20);
        assert_true(cfg.code_max == UINT64_C(2) << 20);
        assert_true(cfg.tmp_size == UINT64_C(128) << 20);
        assert_true(cfg.queue_timeout_usec == UINT64_C(20) * 1000000);
        assert_int_equal(cfg.open_files_max, 512);
        assert_int_equal(cfg.uid_min, 20000);
        assert_int_equal(cfg.uid_max, 20099);
        assert_string_equal(cfg.state_dir, "/run/sb");
        assert_string_equal(cfg.runtime_dir, "/srv/sb");
        assert_string_equal(cfg.enter_library, "/opt/lib/enter.so");
        config_done(&cfg);

        free(dropin);
        free(python_env);
        free(node_env);
        free(syscalls_env);
        free(dropins);
        free(main_file);
}

/* An empty API_KEY keeps the file's key, as upstream; an empty number is a mistake, not "unset". */
static void test_env_empty_values(void **state) {
        TestDir *d = *state;
        char *main_file = write_file(d->path, "config.yaml", "app:\n  key: from-file\n");
        char *keep[] = { "API_KEY=", "ALLOWED_SYSCALLS=", "HTTP_PROXY=", NULL };
        char *bad[] = { "SANDBOX_PORT=", NULL };
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, main_file, NULL, keep, &err), 0);
        assert_string_equal(cfg.api_key, "from-file");
        config_done(&cfg);

        assert_int_equal(load(&cfg, main_file, NULL, bad, &err), -EINVAL);
        assert_string_equal(err.message,
                            "environment variable SANDBOX_PORT: app.port: '': expected an integer");
        config_error_done(&err);
        config_done(&cfg);
        free(main_file);
}

static void test_env_rejections(void **state) {
        static const struct {
                const char *env;
                const char *message;
        } cases[] = {
                { "MAX_WORKERS=0",
                  "environment variable MAX_WORKERS: max_workers: '0': must be at least 1" },
                { "MAX_REQUESTS=many",
                  "environment variable MAX_REQUESTS: max_requests: 'many': expected an integer" },
                { "ENABLE_NETWORK=maybe", "environment variable ENABLE_NETWORK: enable_network: 'maybe': "
                                          "expected a boolean (true or false)" },
                { "ALLOWED_SYSCALLS=read,ptrace", "environment variable ALLOWED_SYSCALLS: allowed_syscalls: "
                                                  "'ptrace': never allowed: reaches into "
                                                  "other processes" },
                { "ALLOWED_SYSCALLS=read,,write", "environment variable ALLOWED_SYSCALLS: allowed_syscalls: "
                                                  "'read,,write': empty item in the "
                                                  "comma-separated list" },
                { "PYTHON_DEPS_UPDATE_INTERVAL=30", "environment variable PYTHON_DEPS_UPDATE_INTERVAL: "
                                                    "python_deps_update_interval: '30': expected a "
                                                    "Go duration (e.g. 30m, 1h30m, 90s)" },
                { "DIFYSANDBOX_MEMORY_MAX=1K",
                  "environment variable DIFYSANDBOX_MEMORY_MAX: memory_max: '1K': must be at least 16M" },
                { "DIFYSANDBOX_STATE_DIR=run/sb", "environment variable DIFYSANDBOX_STATE_DIR: state_dir: "
                                                  "'run/sb': must be an absolute path" },
                { "DIFYSANDBOX_UID_MAX=9999", "environment variable DIFYSANDBOX_UID_MAX: uid_max: '9999': "
                                              "must not be less than uid_min (10000)" },
        };
        TestDir *d = *state;
        char *main_file = write_file(d->path, "config.yaml", "max_workers: 3\n");

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *env[] = { (char *) cases[i].env, NULL };
                ConfigError err = { 0 };
                Config cfg;

                assert_int_equal(load(&cfg, main_file, NULL, env, &err), -EINVAL);
                assert_non_null(err.message);
                assert_string_equal(err.message, cases[i].message);
                config_error_done(&err);
                config_done(&cfg);
        }
        free(main_file);
}

/* Each bad file is refused with FILE:LINE: KEY: 'VALUE': REASON, exactly. */
static void test_file_rejections(void **state) {
        static const struct {
                const char *yaml;
                const char *message; /* after the file's path */
        } cases[] = {
                { "app:\n  port: 8194\n# upstream hangs on this\nmax_workers: 0\n",
                  ":4: max_workers: '0': must be at least 1" },
                { "app:\n  port: 70000\n", ":2: app.port: '70000': must be between 1 and 65535" },
                { "app:\n  port: 0\n", ":2: app.port: '0': must be between 1 and 65535" },
                { "app:\n  debug: maybe\n", ":2: app.debug: 'maybe': expected a boolean (true or false)" },
                { "app:\n  key: ''\n", ":2: app.key: '': must not be empty" },
                { "worker_timeout: -1\n",
                  ":1: worker_timeout: '-1': expected a duration in seconds (e.g. 5, 2.5, 500ms)" },
                { "worker_timeout: 0\n", ":1: worker_timeout: '0': must be at least 1ms" },
                { "max_requests: 0\n", ":1: max_requests: '0': must be at least 1" },
                { "max_requests: 99999999999\n", ":1: max_requests: '99999999999': must be at most 16384" },
                { "memory_max: 1K\n", ":1: memory_max: '1K': must be at least 16M" },
                { "memory_max: lots\n", ":1: memory_max: 'lots': expected a size in bytes (e.g. 512M, 2G)" },
                { "cpu_quota: 0%\n", ":1: cpu_quota: '0%': must be between 1% and 100000%" },
                { "cpu_quota: 0\n", ":1: cpu_quota: '0': must be between 1% and 100000%" },
                { "cpu_quota: half\n",
                  ":1: cpu_quota: 'half': expected a percentage of one CPU (e.g. 150%)" },
                { "cpu_time: 500ms\n", ":1: cpu_time: '500ms': must be at least 1s" },
                { "tasks_max: 7\n", ":1: tasks_max: '7': must be at least 8" },
                { "output_max: 1000\n", ":1: output_max: '1000': must be at least 1K" },
                { "code_max: 0\n", ":1: code_max: '0': must be at least 1" },
                { "tmp_size: 512K\n", ":1: tmp_size: '512K': must be at least 1M" },
                { "open_files_max: 31\n", ":1: open_files_max: '31': must be at least 32" },
                { "uid_min: 0\n", ":1: uid_min: '0': must be between 1 and 4294967294" },
                { "uid_max: 4294967295\n", ":1: uid_max: '4294967295': must be between 1 and 4294967294" },
                { "uid_max: 20000\n\nuid_min: 20001\n",
                  ":3: uid_min: '20001': must not be greater than uid_max (20000)" },
                { "uid_min: 20000\n", ":1: uid_min: '20000': must not be greater than uid_max (10999)" },
                { "uid_min: 1\nuid_max: 65537\n",
                  ":2: uid_max: '65537': the pool uid_min..uid_max (1..65537) holds more than 65536 UIDs" },
                { "state_dir: run/difysandbox\n",
                  ":1: state_dir: 'run/difysandbox': must be an absolute path" },
                { "python_path: python3\n", ":1: python_path: 'python3': must be an absolute path" },
                { "python_deps_update_interval: 30\n",
                  ":1: python_deps_update_interval: '30': expected a Go duration (e.g. 30m, 1h30m, 90s)" },
                { "python_deps_update_interval: -1h\n",
                  ":1: python_deps_update_interval: '-1h': expected a Go duration (e.g. 30m, 1h30m, 90s)" },
                { "python_deps_update_interval: 500ms\n",
                  ":1: python_deps_update_interval: '500ms': must be at least 1s" },
                { "proxy:\n  http: \"http://a\\nb\"\n",
                  ":2: proxy.http: 'http://a\\x0ab': must be valid UTF-8 without control characters" },
                { "app:\n  key: \"a\\0b\"\n", ":2: app.key: 'a\\x00b': must not contain NUL bytes" },
                { "max_worker: 4\n", ":1: max_worker: unknown key" },
                { "app:\n  prot: 8194\n", ":2: app.prot: unknown key" },
                { "log_level: debug\n", ":1: log_level: unknown key" },
                { "max_workers:\n  - 4\n", ":2: max_workers: expected a single value, got a list" },
                { "max_workers: {n: 4}\n", ":1: max_workers: expected a single value, got a mapping" },
                { "app: 8194\n", ":1: app: '8194': expected a mapping" },
                { "proxy: [a]\n", ":1: proxy: expected a mapping, got a list" },
                { "allowed_syscalls: read\n", ":1: allowed_syscalls: 'read': expected a list" },
                { "allowed_syscalls: {read: 1}\n", ":1: allowed_syscalls: expected a list, got a mapping" },
                { "allowed_syscalls:\n  - read\n  - ptrace\n",
                  ":3: allowed_syscalls: 'ptrace': never allowed: reaches into other processes" },
                { "allowed_syscalls: [execve]\n",
                  ":1: allowed_syscalls: 'execve': never allowed: starts another program" },
                { "allowed_syscalls: [99999]\n",
                  ":1: allowed_syscalls: '99999': unknown system call number" },
                { "allowed_syscalls: [no_such_call]\n",
                  ":1: allowed_syscalls: 'no_such_call': unknown system call" },
                { "python_lib_path:\n  - /usr/lib\n  - [nested]\n",
                  ":3: python_lib_path: expected a list of strings, found a list in it" },
                { "app:\n  port: 8194\n  key: &k secret\nproxy:\n  http: *k\n",
                  ":5: YAML aliases are not supported" },
                { "- max_workers\n", ":1: expected a mapping of keys, got a list" },
                { "max_workers: 4\n---\nmax_requests: 5\n", ":2: only one YAML document is allowed" },
                { "app:\n  port: 8194\n key: x\n",
                  ":3: malformed YAML: did not find expected key (while parsing a block "
                  "mapping at line 1)" },
                { "allowed_syscalls: [read\n",
                  ":2: malformed YAML: did not find expected ',' or ']' (while parsing a flow "
                  "sequence at line 1)" },
                { "app:\n\tport: 8194\n",
                  ":2: malformed YAML: found character that cannot start any token (while "
                  "scanning for the next token at line 2)" },
        };
        TestDir *d = *state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_file(d->path, "config.yaml", "%s", cases[i].yaml), *expected;
                ConfigError err = { 0 };
                Config cfg;

                assert_true(asprintf(&expected, "%s%s", path, cases[i].message) > 0);
                assert_int_equal(load(&cfg, path, NULL, NULL, &err), -EINVAL);
                assert_non_null(err.message);
                assert_string_equal(err.message, expected);
                config_error_done(&err);
                config_done(&cfg);
                free(expected);
                free(path);
        }
}

/* Issue 12: every number has an upper bound, what a key names is checked, and unknown YAML tags are
 * refused, each with file, line, key and reason. All of these loaded before. */
static void test_bounds_and_names_refused(void **state) {
        static const struct {
                const char *yaml;
                const char *message; /* after the file's path */
        } cases[] = {
                { "max_workers: 30000\n", ":1: max_workers: '30000': must be at most 1024" },
                { "max_requests: 4294967295\n", ":1: max_requests: '4294967295': must be at most 16384" },
                { "worker_timeout: 4294967296\n",
                  ":1: worker_timeout: '4294967296': must be at most 3600s" },
                { "worker_timeout: 99999999999999999999\n",
                  ":1: worker_timeout: '99999999999999999999': must be at most 3600s" },
                { "python_deps_update_interval: 876001h\n",
                  ":1: python_deps_update_interval: '876001h': must be at most 3153600000s" },
                { "memory_max: 2T\n", ":1: memory_max: '2T': must be at most 1T" },
                { "cpu_time: 90000\n", ":1: cpu_time: '90000': must be at most 86400s" },
                { "tasks_max: 100000\n", ":1: tasks_max: '100000': must be at most 16384" },
                { "output_max: 1G\n", ":1: output_max: '1G': must be at most 256M" },
                { "code_max: 65M\n", ":1: code_max: '65M': must be at most 64M" },
                { "tmp_size: 2T\n", ":1: tmp_size: '2T': must be at most 1T" },
                { "open_files_max: 2000000\n", ":1: open_files_max: '2000000': must be at most 1048576" },
                { "egress_max_connections: 5000\n",
                  ":1: egress_max_connections: '5000': must be at most 4096" },
                { "egress_max_bytes: 2T\n", ":1: egress_max_bytes: '2T': must be at most 1T" },
                { "egress_idle_timeout: 2h\n",
                  ":1: egress_idle_timeout: '2h': expected a duration in seconds "
                  "(e.g. 5, 2.5, 500ms)" },
                { "egress_idle_timeout: 3601\n", ":1: egress_idle_timeout: '3601': must be at most 3600s" },
                { "max_workers: !custom 4\n", ":1: max_workers: '!custom': unknown YAML tag" },
                { "allowed_syscalls: !list [read]\n", ":1: allowed_syscalls: '!list': unknown YAML tag" },
                { "allowed_syscalls: [read, !x write]\n", ":1: allowed_syscalls: '!x': unknown YAML tag" },
                { "!k max_workers: 4\n", ":1: '!k': unknown YAML tag" },
                { "app:\n  port: ! 8194\n", ":2: app.port: '!': unknown YAML tag" },
                { "python_path: /nonexistent/python3\n", ":1: python_path: '/nonexistent/python3': cannot "
                                                         "use the interpreter: No such file or directory" },
                { "nodejs_path: /etc/os-release\n",
                  ":1: nodejs_path: '/etc/os-release': not an executable file" },
                { "nodejs_path: /usr/bin\n", ":1: nodejs_path: '/usr/bin': not an executable file" },
                { "proxy:\n  http: x\n", ":2: proxy.http: 'x': unsupported proxy: expected "
                                         "http://[USER:PASSWORD@]HOST[:PORT], socks5://HOST[:PORT] or "
                                         "socks5h://HOST[:PORT]" },
                { "proxy:\n  https: 'http://'\n",
                  ":2: proxy.https: 'http://': not a proxy URL: expected SCHEME://HOST[:PORT]" },
                { "proxy:\n  https: 'http://proxy:99999'\n",
                  ":2: proxy.https: 'http://proxy:99999': not a proxy URL: expected SCHEME://HOST[:PORT]" },
                { "proxy:\n  socks5: 'socks5://u:p@proxy'\n",
                  ":2: proxy.socks5: 'socks5://u:p@proxy': unsupported proxy: expected "
                  "http://[USER:PASSWORD@]HOST[:PORT], socks5://HOST[:PORT] or socks5h://HOST[:PORT]" },
        };
        TestDir *d = *state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_file(d->path, "config.yaml", "%s", cases[i].yaml), *expected;
                ConfigError err = { 0 };
                Config cfg;

                assert_true(asprintf(&expected, "%s%s", path, cases[i].message) > 0);
                assert_int_equal(load(&cfg, path, NULL, NULL, &err), -EINVAL);
                assert_non_null(err.message);
                assert_string_equal(err.message, expected);
                config_error_done(&err);
                config_done(&cfg);
                free(expected);
                free(path);
        }
}

/* The bounds themselves and the core schema's tags are accepted. */
static void test_bounds_accepted(void **state) {
        TestDir *d = *state;
        char *path = write_file(d->path, "config.yaml",
                                "max_workers: !!int 1024\n"
                                "max_requests: 16384\n"
                                "worker_timeout: 3600\n"
                                "memory_max: 1T\n"
                                "output_max: 256M\n"
                                "app:\n  key: !!str 123\n"
                                "nodejs_path: %s/bin/node\n"
                                "proxy:\n  http: ''\n  socks5: 'socks5h://[::1]:1080'\n",
                                d->path);
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
        assert_null(err.message);
        assert_int_equal(cfg.max_workers, 1024);
        assert_int_equal(cfg.max_requests, 16384);
        assert_true(cfg.worker_timeout_usec == UINT64_C(3600000000));
        assert_string_equal(cfg.api_key, "123");
        config_done(&cfg);
        free(path);
}

/* Upstream writes syscall numbers of its architecture; a number names its call in the refusal. */
static void test_syscall_numbers(void **state) {
        TestDir *d = *state;
        int ptrace_nr = seccomp_syscall_resolve_name("ptrace");
        char *path, *expected;
        ConfigError err = { 0 };
        Config cfg;

        assert_true(ptrace_nr >= 0);
        path = write_file(d->path, "config.yaml", "allowed_syscalls: [%d, getpid, %d, read]\n", NR_READ,
                          ptrace_nr);
        assert_true(asprintf(&expected,
                             "%s:1: allowed_syscalls: '%d': ptrace: never allowed: reaches into other "
                             "processes",
                             path, ptrace_nr) > 0);
        assert_int_equal(load(&cfg, path, NULL, NULL, &err), -EINVAL);
        assert_string_equal(err.message, expected);
        config_error_done(&err);
        config_done(&cfg);
        free(expected);
        free(path);

        /* Numbers and names mix; a call named twice is listed once. */
        path = write_file(d->path, "config.yaml", "allowed_syscalls: [%d, getpid, read]\n", NR_READ);
        assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
        assert_syscalls(cfg.allowed_syscalls, (const char *const[]){ "read", "getpid", NULL });
        config_done(&cfg);
        free(path);
}

static void test_values_accepted(void **state) {
        TestDir *d = *state;
        char *path = write_file(d->path, "config.yaml",
                                "app.port: 1\n" /* flat dotted keys, as config_format() prints them */
                                "app:\n"
                                "  debug: on\n"
                                "  key: \"x: y # not a comment\"\n"
                                "app:\n"
                                "  port: 2\n" /* the same key again: the later value wins */
                                "worker_timeout: 500ms\n"
                                "python_deps_update_interval: 1.5h\n"
                                "cpu_quota: 150%%\n"
                                "cpu_time: 2.5\n"
                                "memory_max: 64MiB\n"
                                "uid_min: 1\n"
                                "uid_max: 65536\n"
                                "enable_network: off\n"
                                "enable_preload: YES\n");
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
        assert_int_equal(cfg.port, 2);
        assert_true(cfg.debug);
        assert_string_equal(cfg.api_key, "x: y # not a comment");
        assert_true(cfg.worker_timeout_usec == UINT64_C(500000));
        assert_true(cfg.python_deps_update_interval_usec == UINT64_C(5400) * 1000000);
        assert_int_equal(cfg.cpu_quota_percent, 150);
        assert_true(cfg.cpu_time_usec == UINT64_C(2500000));
        assert_true(cfg.memory_max == UINT64_C(64) << 20);
        assert_int_equal(cfg.uid_min, 1);
        assert_int_equal(cfg.uid_max, 65536);
        assert_false(cfg.enable_network);
        assert_true(cfg.enable_preload);
        config_done(&cfg);
        free(path);
}

static void test_go_durations(void **state) {
        static const struct {
                const char *text;
                uint64_t usec;
        } cases[] = {
                { "30m", UINT64_C(1800000000) },
                { "1h", UINT64_C(3600000000) },
                { "90s", UINT64_C(90000000) },
                { "1h30m", UINT64_C(5400000000) },
                { "1m30s", UINT64_C(90000000) },
                { "1.5h", UINT64_C(5400000000) },
                { "2h45m10s", UINT64_C(9910000000) },
                { "1500ms", UINT64_C(1500000) },
                { "876000h", UINT64_C(3153600000000000) }, /* "never", as some deployments write it */
                { "1s1500000us", UINT64_C(2500000) },
                { "1s1000000\u00b5s", UINT64_C(2000000) },      /* micro sign */
                { "1s1000000\u03bcs", UINT64_C(2000000) },      /* Greek mu */
                { "1.0000000019s", UINT64_C(1000000) },         /* digits below a nanosecond drop */
                { "2s.5s", UINT64_C(2500000) },                 /* a fraction without a whole part */
                { "1h1.999999ms1500ns", UINT64_C(3600002001) }, /* nanoseconds below a usec drop */
        };
        TestDir *d = *state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_file(d->path, "config.yaml", "python_deps_update_interval: %s\n",
                                        cases[i].text);
                ConfigError err = { 0 };
                Config cfg;

                assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
                assert_true(cfg.python_deps_update_interval_usec == cases[i].usec);
                config_done(&cfg);
                free(path);
        }
}

/* A list key keeps the first of duplicates, in order, compared as kept: a syscall's number is its name. */
static void test_list_keys_keep_first_of_duplicates(void **state) {
        TestDir *d = *state;
        char *path = write_file(d->path, "config.yaml",
                                "allowed_syscalls: [getpid, write, %d, getpid]\n"
                                "allowed_env_vars: [LANG, TZ, LANG]\n"
                                "pool_preload:\n  python3: [numpy, json, numpy]\n"
                                "egress_allow: [api.example.com, ':443', api.example.com]\n",
                                NR_WRITE);
        ConfigError err = { 0 };
        Config cfg;

        assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
        assert_syscalls(cfg.allowed_syscalls, (const char *const[]){ "getpid", "write", NULL });
        assert_syscalls(cfg.allowed_env_vars, (const char *const[]){ "LANG", "TZ", NULL });
        assert_syscalls(cfg.preload_python3, (const char *const[]){ "numpy", "json", NULL });
        assert_syscalls(cfg.egress_allow, (const char *const[]){ "api.example.com", ":443", NULL });
        config_done(&cfg);
        free(path);
}

/* What config_format() prints loads back to the same Config, and prints the same again. */
static void assert_config_equal(const Config *a, const Config *b) {
        if (!a->api_key)
                assert_null(b->api_key); /* unset stays unset */
        else
                assert_string_equal(a->api_key, b->api_key);
        assert_int_equal(a->port, b->port);
        assert_int_equal(a->debug, b->debug);
        assert_int_equal(a->max_workers, b->max_workers);
        assert_int_equal(a->max_requests, b->max_requests);
        assert_true(a->worker_timeout_usec == b->worker_timeout_usec);
        assert_string_equal(a->python_path, b->python_path);
        assert_string_equal(a->nodejs_path, b->nodejs_path);
        assert_string_equal(a->python_pip_mirror_url, b->python_pip_mirror_url);
        assert_true(a->python_deps_update_interval_usec == b->python_deps_update_interval_usec);
        assert_int_equal(a->enable_network, b->enable_network);
        assert_int_equal(a->enable_preload, b->enable_preload);
        for (size_t i = 0;; i++) {
                if (!a->allowed_syscalls[i]) {
                        assert_null(b->allowed_syscalls[i]);
                        break;
                }
                assert_non_null(b->allowed_syscalls[i]);
                assert_string_equal(a->allowed_syscalls[i], b->allowed_syscalls[i]);
        }
        assert_string_equal(a->proxy_socks5, b->proxy_socks5);
        assert_string_equal(a->proxy_http, b->proxy_http);
        assert_string_equal(a->proxy_https, b->proxy_https);
        assert_true(a->memory_max == b->memory_max);
        assert_int_equal(a->cpu_quota_percent, b->cpu_quota_percent);
        assert_true(a->cpu_time_usec == b->cpu_time_usec);
        assert_int_equal(a->tasks_max, b->tasks_max);
        assert_true(a->output_max == b->output_max);
        assert_true(a->code_max == b->code_max);
        assert_true(a->queue_timeout_usec == b->queue_timeout_usec);
        assert_true(a->tmp_size == b->tmp_size);
        assert_int_equal(a->open_files_max, b->open_files_max);
        assert_int_equal(a->uid_min, b->uid_min);
        assert_int_equal(a->uid_max, b->uid_max);
        assert_string_equal(a->state_dir, b->state_dir);
        assert_string_equal(a->runtime_dir, b->runtime_dir);
        assert_string_equal(a->enter_library, b->enter_library);
}

static char *format_to_string(const Config *cfg, bool show_secrets) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        assert_int_equal(config_format(cfg, f, show_secrets), 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void test_format_round_trip(void **state) {
        TestDir *d = *state;
        char *main_file =
                write_file(d->path, "config.yaml", upstream_yaml, d->path, d->path, NR_READ, NR_WRITE);
        char *env[] = {
                "API_KEY=k'e\"y\\ with: # yaml ~ characters",
                "PIP_MIRROR_URL=https://mirror.example/simple?a=1&b=[2]",
                "HTTP_PROXY=http://user:p%40ss@proxy:3128",
                "WORKER_TIMEOUT=2.5",
                "PYTHON_DEPS_UPDATE_INTERVAL=1h30m15.25s",
                "DIFYSANDBOX_CPU_TIME=1500ms",
                "DIFYSANDBOX_CPU_QUOTA=150",
                "DIFYSANDBOX_MEMORY_MAX=16385K",
                "DIFYSANDBOX_OUTPUT_MAX=1234567",
                "DIFYSANDBOX_STATE_DIR=/run/dify sandbox/état",
                "ALLOWED_SYSCALLS=getpid,gettid",
                NULL,
        };
        ConfigError err = { 0 };
        char *text, *again, *printed;
        Config cfg, back;

        assert_int_equal(load(&cfg, main_file, NULL, env, &err), 0);
        assert_null(err.message);
        text = format_to_string(&cfg, /* show_secrets= */ true);

        printed = write_file(d->path, "printed.yaml", "%s", text);
        assert_int_equal(load(&back, printed, NULL, NULL, &err), 0);
        assert_null(err.message);
        assert_config_equal(&cfg, &back);
        again = format_to_string(&back, true);
        assert_string_equal(text, again);

        /* One "key: value" line per key, in the documented syntax. */
        assert_non_null(strstr(text, "\napp.key: \"k'e\\\"y\\\\ with: # yaml ~ characters\"\n"));
        assert_non_null(strstr(text, "\nworker_timeout: 2500ms\n"));
        assert_non_null(strstr(text, "\npython_deps_update_interval: 1h30m15s250ms\n"));
        assert_non_null(strstr(text, "\ncpu_quota: 150%\n"));
        assert_non_null(strstr(text, "\nmemory_max: 16385K\n"));
        assert_non_null(strstr(text, "\noutput_max: 1234567\n"));
        assert_non_null(strstr(text, "\nallowed_syscalls: [\"getpid\", \"gettid\"]\n"));
        assert_null(strstr(text, "python_lib_path")); /* accepted, not kept */

        free(again);
        free(text);
        free(printed);
        config_done(&back);
        config_done(&cfg);
        free(main_file);
}

static void test_format_defaults_round_trip(void **state) {
        TestDir *d = *state;
        ConfigError err = { 0 };
        Config cfg, back;
        char *text, *path;

        assert_int_equal(config_init_defaults(&cfg), 0);
        text = format_to_string(&cfg, true);
        path = write_file(d->path, "printed.yaml", "%s", text);
        assert_int_equal(load(&back, path, NULL, NULL, &err), 0);
        assert_config_equal(&cfg, &back);
        free(text);
        free(path);
        config_done(&back);
        config_done(&cfg);
}

static void test_format_hides_secret(void **state) {
        Config cfg;
        char *text;

        assert_int_equal(config_init_defaults(&cfg), 0);
        free(cfg.api_key);
        cfg.api_key = strdup("very-secret-key");
        text = format_to_string(&cfg, /* show_secrets= */ false);
        assert_non_null(strstr(text, "app.key: <set>\n"));
        assert_null(strstr(text, "very-secret-key"));
        free(text);

        text = format_to_string(&cfg, true);
        assert_non_null(strstr(text, "app.key: \"very-secret-key\"\n"));
        free(text);
        config_done(&cfg);
}

/* No key configured: check-config says <unset>; the published form leaves the line out, since no value
 * of app.key loads back as "none" (and the defaults round trip above loads it back unset). */
static void test_format_unset_key(void **state) {
        Config cfg;
        char *text;

        assert_int_equal(config_init_defaults(&cfg), 0);
        assert_null(cfg.api_key);
        text = format_to_string(&cfg, /* show_secrets= */ false);
        assert_non_null(strstr(text, "app.key: <unset>\n"));
        free(text);
        text = format_to_string(&cfg, true);
        assert_null(strstr(text, "app.key"));
        assert_null(strstr(text, "dify-sandbox"));
        free(text);
        config_done(&cfg);
}

/* A refused value is quoted with its control bytes escaped and cut after 128 bytes, marked. */
static void test_long_value_cut_in_message(void **state) {
        TestDir *d = *state;
        char long_value[300], *path, *expected;
        ConfigError err = { 0 };
        Config cfg;

        memset(long_value, 'a', sizeof(long_value) - 1);
        long_value[sizeof(long_value) - 1] = '\0';
        path = write_file(d->path, "config.yaml", "state_dir: %s\n", long_value);
        long_value[128] = '\0';
        assert_true(asprintf(&expected, "%s:1: state_dir: '%s...': must be an absolute path", path,
                             long_value) > 0);
        assert_int_equal(load(&cfg, path, NULL, NULL, &err), -EINVAL);
        assert_string_equal(err.message, expected);
        config_error_done(&err);
        config_done(&cfg);
        free(expected);
        free(path);
}

static void test_empty_and_comment_files(void **state) {
        static const char *const texts[] = { "", "# nothing here\n", "---\n", "~\n" };
        TestDir *d = *state;

        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                char *path = write_file(d->path, "config.yaml", "%s", texts[i]);
                ConfigError err = { 0 };
                Config cfg;

                assert_int_equal(load(&cfg, path, NULL, NULL, &err), 0);
                assert_int_equal(cfg.max_workers, 4);
                config_done(&cfg);
                free(path);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_upstream_config_loads, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_upstream_empty_values, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_missing_files_are_fine, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_unreadable_main_file, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_dropin_order, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_dropin_error_names_dropin, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_every_error_is_collected, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_env_overrides_win, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_env_empty_values, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_env_rejections, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_file_rejections, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_bounds_and_names_refused, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_bounds_accepted, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_syscall_numbers, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_values_accepted, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_go_durations, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_list_keys_keep_first_of_duplicates, setup_dir,
                                                teardown_dir),
                cmocka_unit_test_setup_teardown(test_format_round_trip, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_format_defaults_round_trip, setup_dir, teardown_dir),
                cmocka_unit_test(test_format_hides_secret),
                cmocka_unit_test(test_format_unset_key),
                cmocka_unit_test_setup_teardown(test_long_value_cut_in_message, setup_dir, teardown_dir),
                cmocka_unit_test_setup_teardown(test_empty_and_comment_files, setup_dir, teardown_dir),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
