/* config-file: see config-file.h. */

#include "config-file.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>
#include <yaml.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/strv.h"
#include "common/time-util.h"
#include "config-drift.h"
#include "egress/egress-policy.h"
#include "egress/egress.h"
#include "key-digest.h"
#include "sandbox/seccomp-policy.h"

#define CONFIG_FILE_SIZE_MAX (UINT64_C(1) << 20) /* a larger config file is a mistake, not a config */
#define MESSAGE_VALUE_MAX 128 /* bytes of a refused value or key quoted in a message; more is cut, "..." */
#define UID_POOL_MAX UINT64_C(65536)
#define NUMBER_TEXT_MAX 64 /* "18446744073709551615us", "5124095576h1m5s551615us": well below */

typedef enum KeyType {
        KEY_SECTION,      /* a mapping of more keys: app, proxy */
        KEY_STRING,       /* text, may be empty */
        KEY_SECRET,       /* text, not empty; config_format() prints <set> */
        KEY_PATH,         /* an absolute path */
        KEY_INTERPRETER,  /* an executable file on the host (check_interpreter()); empty: the default */
        KEY_PROXY,        /* a proxy URL as egress_proxy_url_check() takes it, or empty */
        KEY_PORT,         /* 1..65535 */
        KEY_UINT32,       /* min..max */
        KEY_UID,          /* 1..4294967294: never 0, never (uid_t) -1 */
        KEY_BOOL,         /* parse_boolean() */
        KEY_SIZE,         /* parse_size(): bytes, K/M/G/T */
        KEY_DURATION,     /* parse_duration(): seconds, "2.5", "500ms" */
        KEY_GO_DURATION,  /* Go's time.ParseDuration(): "30m", "1h30m"; empty means the default */
        KEY_PERCENT,      /* "150%", or a plain number of percent; 1..100000 */
        KEY_SYSCALLS,     /* a list of syscall names or numbers (of this architecture) */
        KEY_STRING_LIST,  /* a list of strings, checked and then dropped */
        KEY_ENV_NAMES,    /* a list of environment variable names */
        KEY_EGRESS_RULES, /* a list of egress rules (egress_rule_parse()) */
        KEY_MODULES,      /* a list of module names a prepared interpreter imports */
} KeyType;

typedef struct KeyDef {
        const char *name; /* dotted: app.port is "port" in the mapping "app" */
        KeyType type;
        size_t offset; /* of the field in Config */
        uint64_t min;  /* for numbers, sizes and durations */
        uint64_t max;  /* the same; 0: the type's own bound (ports, UIDs, percent) */
} KeyDef;

#define F(field) offsetof(Config, field)
#define KiB UINT64_C(1024)
#define MiB (KiB << 10)
#define GiB (MiB << 10)
#define TiB (GiB << 10)
#define HOUR_USEC (3600 * USEC_PER_SEC)

/* Every key a config file may hold, in the order config_format() prints them. The upstream keys come first
 * and mean what they mean in langgenius/dify-sandbox's config.yaml (DESIGN §1). Every number has an upper
 * bound (difysandbox.conf(5) says each, and why where it is not obvious): a value beyond it is a mistake
 * that would otherwise show only at run time (max_workers: 30000 once made every run fail). */
/* clang-format off */
static const KeyDef keys[] = {
        /* name                          type               field                     min, max */
        { "app",                         KEY_SECTION,       0,                        0, 0 },
        { "app.port",                    KEY_PORT,          F(port),                  1, 0 },
        { "app.debug",                   KEY_BOOL,          F(debug),                 0, 0 },
        { "app.key",                     KEY_SECRET,        F(api_key),               0, 0 },
        /* what the runner hands its workers instead of app.key (key-digest.h); also an operator's choice */
        { "app.key_digest",              KEY_SECRET,        F(api_key_digest),        0, 0 },
        /* upstream hangs on max_workers: 0; we refuse it. A run holds a UID: the default pool has 1000 */
        { "max_workers",                 KEY_UINT32,        F(max_workers),           1, 1024 },
        /* every request in flight is a connection and a worker process */
        { "max_requests",                KEY_UINT32,        F(max_requests),          1, 16384 },
        { "worker_timeout",              KEY_DURATION,      F(worker_timeout_usec),   USEC_PER_MSEC,
                                                                                      HOUR_USEC },
        { "python_path",                 KEY_INTERPRETER,   F(python_path),           0, 0 },
        /* accepted and checked, not kept: the runtime tree decides what runs see */
        { "python_lib_path",             KEY_STRING_LIST,   0,                        0, 0 },
        { "python_pip_mirror_url",       KEY_STRING,        F(python_pip_mirror_url), 0, 0 },
        { "python_deps_update_interval", KEY_GO_DURATION,   F(python_deps_update_interval_usec),
                                                                         USEC_PER_SEC, 876000 * HOUR_USEC },
        { "nodejs_path",                 KEY_INTERPRETER,   F(nodejs_path),           0, 0 },
        { "enable_network",              KEY_BOOL,          F(enable_network),        0, 0 },
        { "enable_preload",              KEY_BOOL,          F(enable_preload),        0, 0 },
        { "allowed_syscalls",            KEY_SYSCALLS,      F(allowed_syscalls),      0, 0 },
        { "proxy",                       KEY_SECTION,       0,                        0, 0 },
        { "proxy.socks5",                KEY_PROXY,         F(proxy_socks5),          0, 0 },
        { "proxy.http",                  KEY_PROXY,         F(proxy_http),            0, 0 },
        { "proxy.https",                 KEY_PROXY,         F(proxy_https),           0, 0 },
        { "proxy.no_proxy",              KEY_STRING,        F(proxy_no_proxy),        0, 0 },
        /* kept and shown, unused: we log to journald */
        { "log_path",                    KEY_STRING,        F(log_path),              0, 0 },
        /* variables of the service's environment that runs get too */
        { "allowed_env_vars",            KEY_ENV_NAMES,     F(allowed_env_vars),      0, 0 },
        /* ours: difysandbox.conf(5) */
        { "memory_max",                  KEY_SIZE,          F(memory_max),            16 * MiB, 1 * TiB },
        { "cpu_quota",                   KEY_PERCENT,       F(cpu_quota_percent),     1, 0 },
        { "cpu_time",                    KEY_DURATION,      F(cpu_time_usec),         USEC_PER_SEC,
                                                                                      24 * HOUR_USEC },
        { "tasks_max",                   KEY_UINT32,        F(tasks_max),             8, 16384 },
        /* kept in the worker's memory, twice (stdout, stderr), and again in the answer */
        { "output_max",                  KEY_SIZE,          F(output_max),            1 * KiB, 256 * MiB },
        { "code_max",                    KEY_SIZE,          F(code_max),              1, 64 * MiB },
        /* 0: no queue, a request that finds every worker busy gets 503 at once */
        { "queue_timeout",               KEY_DURATION,      F(queue_timeout_usec),    0, 1 * HOUR_USEC },
        { "tmp_size",                    KEY_SIZE,          F(tmp_size),              1 * MiB, 1 * TiB },
        /* the kernel's default fs.nr_open */
        { "open_files_max",              KEY_UINT32,        F(open_files_max),        32, 1048576 },
        { "prewarm",                     KEY_BOOL,          F(prewarm),               0, 0 },
        /* the runner's warm pool (src/runner/pool.h): prepared runs per language, and what they import;
         * each holds a UID and an interpreter's memory */
        { "pool_size",                   KEY_SECTION,       0,                        0, 0 },
        { "pool_size.python3",           KEY_UINT32,        F(pool_python3),          0, 64 },
        { "pool_size.nodejs",            KEY_UINT32,        F(pool_nodejs),           0, 64 },
        { "pool_preload",                KEY_SECTION,       0,                        0, 0 },
        { "pool_preload.python3",        KEY_MODULES,       F(preload_python3),       0, 0 },
        { "pool_preload.nodejs",         KEY_MODULES,       F(preload_nodejs),        0, 0 },
        /* privilege separation (DESIGN §2): where workers reach the runner, and who they run as */
        { "runner_socket",               KEY_PATH,          F(runner_socket),         0, 0 },
        { "worker_user",                 KEY_STRING,        F(worker_user),           0, 0 },
        { "uid_min",                     KEY_UID,           F(uid_min),               1, 0 },
        { "uid_max",                     KEY_UID,           F(uid_max),               1, 0 },
        { "state_dir",                   KEY_PATH,          F(state_dir),             0, 0 },
        { "runtime_dir",                 KEY_PATH,          F(runtime_dir),           0, 0 },
        { "enter_library",               KEY_PATH,          F(enter_library),         0, 0 },
        /* dependency generations: src/manager */
        { "python_requirements",         KEY_PATH,          F(python_requirements),   0, 0 },
        { "nodejs_packages",             KEY_PATH,          F(nodejs_packages),       0, 0 },
        { "npm_registry",                KEY_STRING,        F(npm_registry),          0, 0 },
        /* the egress relay of runs with network: src/egress */
        { "egress_allow",                KEY_EGRESS_RULES,  F(egress_allow),          0, 0 },
        { "egress_deny",                 KEY_EGRESS_RULES,  F(egress_deny),           0, 0 },
        /* each connection is two fds of the relay process */
        { "egress_max_connections",      KEY_UINT32,        F(egress_max_connections),
                                                                                      1, 4096 },
        { "egress_max_bytes",            KEY_SIZE,          F(egress_max_bytes),      1 * KiB, 1 * TiB },
        { "egress_idle_timeout",         KEY_DURATION,      F(egress_idle_timeout_usec),
                                                                         USEC_PER_SEC, HOUR_USEC },
};

typedef struct EnvOverride {
        const char *variable;
        const char *key;
        bool empty_is_unset; /* upstream ignores the variable when it is empty; elsewhere empty is a value */
} EnvOverride;

/* Applied in this order, after every file. The upstream names are upstream's; ours are DIFYSANDBOX_<KEY>. */
static const EnvOverride env_overrides[] = {
        /* variable                          key                            empty means unset */
        { "API_KEY",                         "app.key",                     true },
        { "SANDBOX_PORT",                    "app.port",                    false },
        { "MAX_WORKERS",                     "max_workers",                 false },
        { "MAX_REQUESTS",                    "max_requests",                false },
        { "WORKER_TIMEOUT",                  "worker_timeout",              false },
        { "PYTHON_PATH",                     "python_path",                 true },
        { "PIP_MIRROR_URL",                  "python_pip_mirror_url",       true },
        { "PYTHON_DEPS_UPDATE_INTERVAL",     "python_deps_update_interval", true },
        { "NODEJS_PATH",                     "nodejs_path",                 true },
        { "ENABLE_NETWORK",                  "enable_network",              false },
        { "ENABLE_PRELOAD",                  "enable_preload",              false },
        { "ALLOWED_SYSCALLS",                "allowed_syscalls",            true },
        { "SOCKS5_PROXY",                    "proxy.socks5",                true },
        { "HTTP_PROXY",                      "proxy.http",                  true },
        { "HTTPS_PROXY",                     "proxy.https",                 true },
        { "DIFYSANDBOX_MEMORY_MAX",          "memory_max",                  false },
        { "DIFYSANDBOX_CPU_QUOTA",           "cpu_quota",                   false },
        { "DIFYSANDBOX_CPU_TIME",            "cpu_time",                    false },
        { "DIFYSANDBOX_TASKS_MAX",           "tasks_max",                   false },
        { "DIFYSANDBOX_OUTPUT_MAX",          "output_max",                  false },
        { "DIFYSANDBOX_CODE_MAX",            "code_max",                    false },
        { "DIFYSANDBOX_QUEUE_TIMEOUT",       "queue_timeout",               false },
        { "DIFYSANDBOX_TMP_SIZE",            "tmp_size",                    false },
        { "DIFYSANDBOX_OPEN_FILES_MAX",      "open_files_max",              false },
        { "DIFYSANDBOX_PREWARM",             "prewarm",                     false },
        { "DIFYSANDBOX_POOL_SIZE_PYTHON3",   "pool_size.python3",           false },
        { "DIFYSANDBOX_POOL_SIZE_NODEJS",    "pool_size.nodejs",            false },
        { "DIFYSANDBOX_POOL_PRELOAD_PYTHON3",
                                             "pool_preload.python3",        false },
        { "DIFYSANDBOX_POOL_PRELOAD_NODEJS", "pool_preload.nodejs",         false },
        { "DIFYSANDBOX_RUNNER_SOCKET",       "runner_socket",               false },
        { "DIFYSANDBOX_WORKER_USER",         "worker_user",                 false },
        { "DIFYSANDBOX_UID_MIN",             "uid_min",                     false },
        { "DIFYSANDBOX_UID_MAX",             "uid_max",                     false },
        { "DIFYSANDBOX_STATE_DIR",           "state_dir",                   false },
        { "DIFYSANDBOX_RUNTIME_DIR",         "runtime_dir",                 false },
        { "DIFYSANDBOX_ENTER_LIBRARY",       "enter_library",               false },
        { "DIFYSANDBOX_PYTHON_REQUIREMENTS", "python_requirements",         false },
        { "DIFYSANDBOX_NODEJS_PACKAGES",     "nodejs_packages",             false },
        { "NPM_REGISTRY",                    "npm_registry",                true },
        { "DIFYSANDBOX_EGRESS_ALLOW",        "egress_allow",                false },
        { "DIFYSANDBOX_EGRESS_DENY",         "egress_deny",                 false },
        { "DIFYSANDBOX_EGRESS_MAX_CONNECTIONS",
                                             "egress_max_connections",      false },
        { "DIFYSANDBOX_EGRESS_MAX_BYTES",    "egress_max_bytes",            false },
        { "DIFYSANDBOX_EGRESS_IDLE_TIMEOUT", "egress_idle_timeout",         false },
};
/* clang-format on */

/* A scalar of a file, or an environment value. */
typedef struct Scalar {
        char *text;    /* NUL-terminated; owned by whoever made the Scalar */
        size_t len;    /* may count NUL bytes, which are refused */
        unsigned line; /* 1-based; 0 in the environment */
        bool null;     /* a plain "", "~" or "null": YAML's null */
} Scalar;

typedef struct ScalarList {
        Scalar *items; /* each text owned */
        size_t n;
} ScalarList;

/* Where a key got its value last, for errors that involve two keys (uid_min > uid_max). */
typedef struct KeyOrigin {
        char *where;
        unsigned line;
        char *value;
        unsigned seq; /* 0: never set, the default */
} KeyOrigin;

typedef struct LoadContext {
        Config *cfg;
        ConfigError *reterr;
        const char *where; /* the file being read, or "environment variable X" */
        bool broken;       /* the YAML of the file being read cannot be followed any further */
        unsigned seq;
        KeyOrigin origins[ELEMENTSOF(keys)];
} LoadContext;

static void scalar_list_done(ScalarList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].text);
        free(l->items);
        *l = (ScalarList){ 0 };
}

static void yaml_event_deletep(yaml_event_t *e) {
        yaml_event_delete(e); /* fine on a zeroed event */
}

static void yaml_parser_deletep(yaml_parser_t *p) {
        yaml_parser_delete(p);
}

DEFINE_POINTER_CLEANUP(DIR *, closedir);

static void load_context_done(LoadContext *ctx) {
        for (size_t i = 0; i < ELEMENTSOF(ctx->origins); i++) {
                free(ctx->origins[i].where);
                free(ctx->origins[i].value);
        }
}

void config_error_done(ConfigError *e) {
        if (!e)
                return;
        free(e->message);
        free(e->all);
        *e = (ConfigError){ 0 };
}

/* Keeps msg as the first error if there is none yet, and adds it to the list of all. */
static int config_error_add(ConfigError *e, char *msg) {
        size_t old = e->all ? strlen(e->all) : 0, n = strlen(msg);
        char *all = realloc(e->all, old + n + 2);

        if (!all)
                return -ENOMEM;
        memcpy(all + old, msg, n);
        memcpy(all + old + n, "\n", 2);
        e->all = all;
        e->n++;
        if (!e->message) {
                e->message = strdup(msg);
                if (!e->message)
                        return -ENOMEM;
        }
        return 0;
}

/* Bytes of s for a message: control bytes as \xNN, at most MESSAGE_VALUE_MAX of them, a cut marked. */
static void fput_escaped(FILE *f, const char *s, size_t len) {
        size_t shown = len < MESSAGE_VALUE_MAX ? len : MESSAGE_VALUE_MAX;

        for (size_t i = 0; i < shown; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c < 0x20 || c == 0x7f)
                        (void) fprintf(f, "\\x%02x", c);
                else
                        (void) fputc(c, f);
        }
        if (shown < len)
                (void) fputs("...", f);
}

/* Adds "WHERE[:LINE][: KEY][: 'VALUE']: REASON" to reterr's errors and returns error, or -ENOMEM. */
static int config_verror(ConfigError *reterr, int error, const char *where, unsigned line, const char *key,
                         const char *value, size_t value_len, const char *format, va_list ap) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *m;

        if (!reterr)
                return error;
        m = open_memstream(&buf, &size);
        if (!m)
                return -ENOMEM;
        (void) fputs(where, m);
        if (line > 0)
                (void) fprintf(m, ":%u", line);
        if (key) {
                (void) fputs(": ", m);
                fput_escaped(m, key, strlen(key));
        }
        if (value) {
                (void) fputs(": '", m);
                fput_escaped(m, value, value_len);
                (void) fputc('\'', m);
        }
        (void) fputs(": ", m);
        (void) vfprintf(m, format, ap);
        if (fclose(m) != 0 || !buf)
                return -ENOMEM;

        if (config_error_add(reterr, buf) < 0)
                return -ENOMEM;
        return error;
}

static int __attribute__((format(printf, 8, 9)))
config_error(ConfigError *reterr, int error, const char *where, unsigned line, const char *key,
             const char *value, size_t value_len, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = config_verror(reterr, error, where, line, key, value, value_len, format, ap);
        va_end(ap);
        return r;
}

/* A refused value of the source being read. */
static int __attribute__((format(printf, 4, 5)))
fail_value(LoadContext *ctx, const KeyDef *def, const Scalar *v, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = config_verror(ctx->reterr, -EINVAL, ctx->where, v->line, def->name, v->text, v->len, format, ap);
        va_end(ap);
        return r;
}

/* A refused key or shape, with no value to quote. */
static int __attribute__((format(printf, 4, 5)))
fail_key(LoadContext *ctx, unsigned line, const char *key, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = config_verror(ctx->reterr, -EINVAL, ctx->where, line, key, NULL, 0, format, ap);
        va_end(ap);
        return r;
}

static const KeyDef *key_lookup(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (streq(keys[i].name, name))
                        return &keys[i];
        return NULL;
}

static void *key_field(Config *cfg, const KeyDef *def) {
        return (uint8_t *) cfg + def->offset;
}

static const void *key_field_const(const Config *cfg, const KeyDef *def) {
        return (const uint8_t *) cfg + def->offset;
}

/* True if s is valid UTF-8 without control characters: no C0 (tab included), DEL, C1, U+2028/U+2029 (YAML
 * line breaks) or U+FEFF. Such characters have no business in a path, URL, key or proxy, and refusing
 * them keeps every value printable on one line. */
static bool string_is_clean(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *) s, *end = p + len;

        while (p < end) {
                uint32_t c;
                size_t n;

                if (*p < 0x80) {
                        c = *p;
                        n = 1;
                } else if ((*p & 0xe0) == 0xc0) {
                        c = *p & 0x1f;
                        n = 2;
                } else if ((*p & 0xf0) == 0xe0) {
                        c = *p & 0x0f;
                        n = 3;
                } else if ((*p & 0xf8) == 0xf0) {
                        c = *p & 0x07;
                        n = 4;
                } else
                        return false;
                if ((size_t) (end - p) < n)
                        return false;
                for (size_t i = 1; i < n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        c = (c << 6) | (p[i] & 0x3f);
                }
                if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000))
                        return false; /* overlong */
                if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                        return false;
                if (c < 0x20 || (c >= 0x7f && c < 0xa0) || c == 0x2028 || c == 0x2029 || c == 0xfeff)
                        return false;
                p += n;
        }
        return true;
}

static void format_size(uint64_t v, char buf[static NUMBER_TEXT_MAX]) {
        static const char suffixes[] = "TGMK";

        for (size_t i = 0; i < sizeof(suffixes) - 1; i++) {
                uint64_t unit = UINT64_C(1) << (10 * (4 - i));
                if (v > 0 && v % unit == 0) {
                        (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "%c", v / unit, suffixes[i]);
                        return;
                }
        }
        (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64, v);
}

/* In parse_duration()'s syntax. Whole seconds are printed bare ("5", as upstream's worker_timeout) unless
 * with_unit, which messages use ("1s"). */
static void format_duration(uint64_t usec, bool with_unit, char buf[static NUMBER_TEXT_MAX]) {
        if (usec % USEC_PER_SEC == 0)
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "%s", usec / USEC_PER_SEC,
                                with_unit ? "s" : "");
        else if (usec % USEC_PER_MSEC == 0)
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "us", usec);
}

/* The units of Go's time.ParseDuration(). */
/* clang-format off */
static const struct {
        const char *unit;
        uint64_t nsec;
        unsigned frac_digits; /* digits of a fraction that still count: nsec = 10^frac_digits * k */
} go_units[] = {
        { "ns",         1,                     0 },
        { "us",         1000,                  3 },
        { "\u00b5s",    1000,                  3 }, /* micro sign */
        { "\u03bcs",    1000,                  3 }, /* Greek mu */
        { "ms",         1000000,               6 },
        { "s",          UINT64_C(1000000000),  9 },
        { "m",          UINT64_C(60000000000), 9 },
        { "h",          UINT64_C(3600000000000), 9 },
};
/* clang-format on */

/* The value of the fraction digits frac[0..n) of one unit u, in nanoseconds: the digits beyond the unit's
 * precision are dropped. */
static int go_duration_fraction(const char *frac, size_t n, size_t u, uint64_t *ret_nsec) {
        size_t k = n < go_units[u].frac_digits ? n : go_units[u].frac_digits;
        uint64_t f, scale = go_units[u].nsec;
        int r;

        if (k == 0) {
                *ret_nsec = 0;
                return 0;
        }
        _cleanup_free_ char *t = strndup(frac, k);
        if (!t)
                return -ENOMEM;
        r = parse_uint64(t, &f);
        if (r < 0)
                return r;
        for (size_t i = 0; i < k; i++)
                scale /= 10;
        *ret_nsec = f * scale; /* f * scale < nsec: no overflow */
        return 0;
}

/* One term of a Go duration at *p ("30m", "1.5h"): its value in nanoseconds, and *p moved past it. */
static int go_duration_term(const char **p, uint64_t *ret_nsec) {
        static const char digits[] = "0123456789";
        size_t n_whole = strspn(*p, digits), n_frac = 0, n_unit, u;
        const char *q = *p + n_whole, *frac = NULL;
        uint64_t whole = 0, f, v;
        int r;

        if (*q == '.') {
                frac = q + 1;
                n_frac = strspn(frac, digits);
                q = frac + n_frac;
        }
        if (n_whole == 0 && n_frac == 0)
                return -EINVAL;
        n_unit = strcspn(q, "0123456789.");
        for (u = 0; u < ELEMENTSOF(go_units); u++)
                if (strlen(go_units[u].unit) == n_unit && strncmp(q, go_units[u].unit, n_unit) == 0)
                        break;
        if (u >= ELEMENTSOF(go_units))
                return -EINVAL;

        if (n_whole > 0) {
                _cleanup_free_ char *t = strndup(*p, n_whole);
                if (!t)
                        return -ENOMEM;
                r = parse_uint64(t, &whole);
                if (r < 0)
                        return r;
        }
        if (whole > UINT64_MAX / go_units[u].nsec)
                return -ERANGE;
        v = whole * go_units[u].nsec;
        r = go_duration_fraction(frac, n_frac, u, &f);
        if (r < 0)
                return r;
        if (v > UINT64_MAX - f)
                return -ERANGE;
        *ret_nsec = v + f;
        *p = q + n_unit;
        return 0;
}

/* Go's time.ParseDuration() syntax, which upstream uses for python_deps_update_interval: decimal numbers,
 * each with an optional fraction and a unit (ns, us, µs, ms, s, m, h), in sequence: "30m", "1h30m",
 * "1.5h". "0" needs no unit. No sign: a negative interval means nothing here. Precision below a
 * microsecond is dropped. Returns -EINVAL, -ERANGE or -ENOMEM. */
static int parse_go_duration(const char *s, uint64_t *ret_usec) {
        uint64_t total = 0;
        const char *p = s;

        if (streq(s, "0")) {
                *ret_usec = 0;
                return 0;
        }
        if (*s == '\0')
                return -EINVAL;

        while (*p != '\0') {
                uint64_t v;
                int r = go_duration_term(&p, &v);
                if (r < 0)
                        return r;
                if (total > UINT64_MAX - v)
                        return -ERANGE;
                total += v;
        }
        *ret_usec = total / 1000;
        return 0;
}

/* The shortest Go duration of usec: "30m", "1h30m", "1m30s", "1h500ms". */
static void format_go_duration(uint64_t usec, char buf[static NUMBER_TEXT_MAX]) {
        uint64_t h = usec / (3600 * USEC_PER_SEC), m = usec / (60 * USEC_PER_SEC) % 60,
                 s = usec / USEC_PER_SEC % 60, rest = usec % USEC_PER_SEC;
        size_t k = 0;

        buf[0] = '\0';
        if (h > 0)
                k += (size_t) snprintf(buf + k, NUMBER_TEXT_MAX - k, "%" PRIu64 "h", h);
        if (m > 0)
                k += (size_t) snprintf(buf + k, NUMBER_TEXT_MAX - k, "%" PRIu64 "m", m);
        if (s > 0 || usec == 0)
                k += (size_t) snprintf(buf + k, NUMBER_TEXT_MAX - k, "%" PRIu64 "s", s);
        if (rest > 0 && rest % USEC_PER_MSEC == 0)
                (void) snprintf(buf + k, NUMBER_TEXT_MAX - k, "%" PRIu64 "ms", rest / USEC_PER_MSEC);
        else if (rest > 0)
                (void) snprintf(buf + k, NUMBER_TEXT_MAX - k, "%" PRIu64 "us", rest);
}

/* The built-in default of a string key (what config_init_defaults() gives), for upstream's "empty means
 * the default". */
static int default_string(const KeyDef *def, char **ret) {
        Config d;
        char *s;
        int r;

        r = config_init_defaults(&d);
        if (r < 0)
                return r;
        s = strdup(*(char **) key_field(&d, def));
        config_done(&d);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int default_uint64(const KeyDef *def, uint64_t *ret) {
        Config d;
        int r;

        r = config_init_defaults(&d);
        if (r < 0)
                return r;
        *ret = *(uint64_t *) key_field(&d, def);
        config_done(&d);
        return 0;
}

/* What an interpreter key names must be there: the runtime trees are built from it and the installer runs
 * it. The built-in default is not checked: a host without Node.js is fine until a run asks for it. */
static int check_interpreter(LoadContext *ctx, const KeyDef *def, const Scalar *v, const char *path) {
        _cleanup_free_ char *fallback = NULL;
        struct stat st;
        int r;

        r = default_string(def, &fallback);
        if (r < 0)
                return r;
        if (streq(path, fallback))
                return 0;
        if (stat(path, &st) < 0)
                return fail_value(ctx, def, v, "cannot use the interpreter: %s", strerror(errno));
        if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
                return fail_value(ctx, def, v, "not an executable file");
        return 0;
}

static int check_proxy(LoadContext *ctx, const KeyDef *def, const Scalar *v, const char *url) {
        int r;

        r = egress_proxy_url_check(url);
        if (r == -ENOMEM)
                return r;
        if (r == -EPROTONOSUPPORT)
                return fail_value(ctx, def, v,
                                  "unsupported proxy: expected http://[USER:PASSWORD@]HOST[:PORT], "
                                  "socks5://HOST[:PORT] or socks5h://HOST[:PORT]");
        if (r < 0)
                return fail_value(ctx, def, v, "not a proxy URL: expected SCHEME://HOST[:PORT]");
        return 0;
}

static int set_string(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        char **field = key_field(ctx->cfg, def);
        const char *s = v->null ? "" : v->text;
        char *copy;
        int r;

        if (!string_is_clean(s, strlen(s)))
                return fail_value(ctx, def, v, "must be valid UTF-8 without control characters");
        if (def->type == KEY_INTERPRETER && s[0] == '\0') {
                r = default_string(def, &copy);
                if (r < 0)
                        return r;
        } else {
                if (def->type == KEY_SECRET && s[0] == '\0')
                        return fail_value(ctx, def, v, "must not be empty");
                if (def->offset == F(api_key_digest) && !key_digest_valid(s))
                        return fail_value(ctx, def, v,
                                          "must be sha256:SALT:DIGEST (32 and 64 lower-case hex digits), as "
                                          "difysandbox makes it");
                if ((def->type == KEY_PATH || def->type == KEY_INTERPRETER) && s[0] != '/')
                        return fail_value(ctx, def, v, "must be an absolute path");
                r = def->type == KEY_INTERPRETER ? check_interpreter(ctx, def, v, s)
                    : def->type == KEY_PROXY     ? check_proxy(ctx, def, v, s)
                                                 : 0;
                if (r < 0)
                        return r;
                copy = strdup(s);
                if (!copy)
                        return -ENOMEM;
        }
        free(*field);
        *field = copy;
        return 0;
}

/* Integers: ports, UIDs and the KEY_UINT32 keys, within def->min and their bound. */
static int set_integer(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        void *field = key_field(ctx->cfg, def);
        uint64_t max = def->max;
        uint32_t u32;
        int r;

        if (def->type == KEY_PORT)
                max = UINT16_MAX;
        else if (def->type == KEY_UID)
                max = UINT32_MAX - 1; /* (uid_t) -1 is "no change" to setresuid() */
        assert(max > 0);

        r = parse_uint32(v->text, &u32);
        if (r == -EINVAL)
                return fail_value(ctx, def, v, "expected an integer");
        if (def->type != KEY_UINT32 && (r < 0 || u32 < def->min || u32 > max))
                return fail_value(ctx, def, v, "must be between %" PRIu64 " and %" PRIu64, def->min, max);
        if (r < 0 || u32 > max)
                return fail_value(ctx, def, v, "must be at most %" PRIu64, max);
        if (u32 < def->min)
                return fail_value(ctx, def, v, "must be at least %" PRIu64, def->min);
        if (def->type == KEY_PORT)
                *(uint16_t *) field = (uint16_t) u32;
        else
                *(uint32_t *) field = u32;
        return 0;
}

/* Sizes and durations, once parsed: within def->min and def->max, said in the key's own units. */
static int set_bounded(LoadContext *ctx, const KeyDef *def, const Scalar *v, uint64_t u64) {
        char min_text[NUMBER_TEXT_MAX], max_text[NUMBER_TEXT_MAX];

        assert(def->max > 0);
        if (def->type == KEY_SIZE) {
                format_size(def->min, min_text);
                format_size(def->max, max_text);
        } else {
                format_duration(def->min, /* with_unit= */ true, min_text);
                format_duration(def->max, /* with_unit= */ true, max_text);
        }
        if (u64 < def->min)
                return fail_value(ctx, def, v, "must be at least %s", min_text);
        if (u64 > def->max)
                return fail_value(ctx, def, v, "must be at most %s", max_text);
        *(uint64_t *) key_field(ctx->cfg, def) = u64;
        return 0;
}

static int set_number(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        void *field = key_field(ctx->cfg, def);
        uint64_t u64;
        uint32_t u32;
        bool b;
        int r;

        switch (def->type) {
        case KEY_PORT:
        case KEY_UINT32:
        case KEY_UID:
                return set_integer(ctx, def, v);

        case KEY_BOOL:
                if (parse_boolean(v->text, &b) < 0)
                        return fail_value(ctx, def, v, "expected a boolean (true or false)");
                *(bool *) field = b;
                return 0;

        case KEY_SIZE:
                r = parse_size(v->text, &u64);
                if (r == -ERANGE)
                        u64 = UINT64_MAX; /* said as "must be at most" */
                else if (r < 0)
                        return fail_value(ctx, def, v, "expected a size in bytes (e.g. 512M, 2G)");
                return set_bounded(ctx, def, v, u64);

        case KEY_DURATION:
                r = parse_duration(v->text, &u64);
                if (r == -ERANGE)
                        u64 = UINT64_MAX;
                else if (r < 0)
                        return fail_value(ctx, def, v,
                                          "expected a duration in seconds (e.g. 5, 2.5, 500ms)");
                return set_bounded(ctx, def, v, u64);

        case KEY_GO_DURATION:
                if (v->null || v->len == 0) { /* upstream: empty means its default of 30m */
                        r = default_uint64(def, &u64);
                        if (r < 0)
                                return r;
                        *(uint64_t *) field = u64;
                        return 0;
                }
                r = parse_go_duration(v->text, &u64);
                if (r == -ENOMEM)
                        return r;
                if (r == -ERANGE)
                        u64 = UINT64_MAX;
                else if (r < 0)
                        return fail_value(ctx, def, v, "expected a Go duration (e.g. 30m, 1h30m, 90s)");
                return set_bounded(ctx, def, v, u64);

        case KEY_PERCENT:
                r = parse_percent(v->text, &u32);
                if (r == -EINVAL) /* a plain number of percent, as upstream-style YAML writes it */
                        r = parse_uint32(v->text, &u32);
                if (r == -EINVAL)
                        return fail_value(ctx, def, v, "expected a percentage of one CPU (e.g. 150%%)");
                if (r < 0 || u32 < 1 || u32 > 100000)
                        return fail_value(ctx, def, v, "must be between 1%% and 100000%%");
                *(uint32_t *) field = u32;
                return 0;

        case KEY_EGRESS_RULES:
        case KEY_ENV_NAMES:
        case KEY_INTERPRETER:
        case KEY_MODULES:
        case KEY_PATH:
        case KEY_PROXY:
        case KEY_SECRET:
        case KEY_SECTION:
        case KEY_STRING_LIST:
        case KEY_STRING:
        case KEY_SYSCALLS:
        default:
                assert(false);
                return -EINVAL;
        }
}

/* One item of allowed_syscalls: a number of this architecture (upstream's form) or a name. */
static int syscall_from_item(LoadContext *ctx, const KeyDef *def, const Scalar *v, char **ret_name) {
        _cleanup_free_ char *name = NULL;
        const char *why;
        bool by_number;
        uint32_t nr;
        int r;

        r = parse_uint32(v->text, &nr);
        by_number = r != -EINVAL;
        if (by_number) {
                if (r < 0 || nr > INT_MAX)
                        return fail_value(ctx, def, v, "unknown system call number");
                name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int) nr);
                if (!name)
                        return fail_value(ctx, def, v, "unknown system call number");
        } else {
                if (!string_is_clean(v->text, v->len) || v->len == 0 ||
                    seccomp_syscall_resolve_name(v->text) == __NR_SCMP_ERROR)
                        return fail_value(ctx, def, v, "unknown system call");
                name = strdup(v->text);
                if (!name)
                        return -ENOMEM;
        }

        why = seccomp_never_allow_reason(name);
        if (why && by_number)
                return fail_value(ctx, def, v, "%s: never allowed: %s", name, why);
        if (why)
                return fail_value(ctx, def, v, "never allowed: %s", why);
        *ret_name = TAKE_PTR(name);
        return 0;
}

static bool env_name_is_valid(const char *s, size_t len) {
        if (len == 0 || !(isalpha((unsigned char) s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < len; i++)
                if (!(isalnum((unsigned char) s[i]) || s[i] == '_'))
                        return false;
        return true;
}

/* A Python module path (numpy, xml.etree) or an npm package name (lodash, @scope/name): what a prepared
 * interpreter imports by name, joined with commas into its environment, so no comma, space or quote. */
static bool module_name_is_valid(const char *s, size_t len) {
        if (len == 0 || len > 214 || s[0] == '.' || s[0] == '/')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!(isalnum((unsigned char) s[i]) || strchr("_.-@/", s[i])) || s[i] == '\0')
                        return false;
        return true;
}

/* One item of a list key, checked, as the configuration keeps it: a module or variable name, an egress
 * rule, or a system call's name. */
static int list_item(LoadContext *ctx, const KeyDef *def, const Scalar *v, char **ret) {
        if (def->type == KEY_MODULES && !module_name_is_valid(v->text, v->len))
                return fail_value(
                        ctx, def, v,
                        "must be a module name (letters, digits and _ . - @ /, not starting with . or /)");
        if (def->type == KEY_ENV_NAMES && !env_name_is_valid(v->text, v->len))
                return fail_value(ctx, def, v,
                                  "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
        if (def->type == KEY_EGRESS_RULES) {
                EgressRule rule;
                const char *why = NULL;
                int r = egress_rule_parse(v->text, &rule, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return fail_value(ctx, def, v, "%s", why);
                egress_rule_done(&rule);
        }
        if (def->type != KEY_MODULES && def->type != KEY_ENV_NAMES && def->type != KEY_EGRESS_RULES)
                return syscall_from_item(ctx, def, v, ret);

        *ret = strndup(v->text, v->len);
        return *ret ? 0 : -ENOMEM;
}

static int set_list(LoadContext *ctx, const KeyDef *def, const ScalarList *l) {
        _cleanup_(strv_freep) char **names = NULL;
        size_t n = 0;
        int r;

        for (size_t i = 0; i < l->n; i++)
                if (memchr(l->items[i].text, 0, l->items[i].len))
                        return fail_value(ctx, def, &l->items[i], "must not contain NUL bytes");

        if (def->type == KEY_STRING_LIST) {
                for (size_t i = 0; i < l->n; i++)
                        if (!string_is_clean(l->items[i].text, l->items[i].len))
                                return fail_value(ctx, def, &l->items[i],
                                                  "must be valid UTF-8 without control characters");
                return 0; /* accepted for upstream's sake; the runtime tree decides what runs see */
        }

        names = calloc(l->n + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                _cleanup_free_ char *name = NULL;

                r = list_item(ctx, def, &l->items[i], &name);
                if (r < 0)
                        return r;
                if (!strv_contains(names, name)) /* the first of duplicates is kept, in order */
                        names[n++] = TAKE_PTR(name);
        }

        char ***field = key_field(ctx->cfg, def);
        (void) strv_free(*field);
        *field = TAKE_PTR(names);
        return 0;
}

static int origin_record(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        KeyOrigin *o = &ctx->origins[def - keys];
        char *where, *value;

        where = strdup(ctx->where);
        value = strndup(v->text, v->len);
        if (!where || !value) {
                free(where);
                free(value);
                return -ENOMEM;
        }
        free(o->where);
        free(o->value);
        *o = (KeyOrigin){ .where = where, .line = v->line, .value = value, .seq = ++ctx->seq };
        return 0;
}

static int set_scalar(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        int r;

        if (memchr(v->text, 0, v->len))
                return fail_value(ctx, def, v, "must not contain NUL bytes");
        switch (def->type) {
        case KEY_STRING:
        case KEY_SECRET:
        case KEY_PATH:
        case KEY_INTERPRETER:
        case KEY_PROXY:
                r = set_string(ctx, def, v);
                break;
        case KEY_BOOL:
        case KEY_DURATION:
        case KEY_EGRESS_RULES:
        case KEY_ENV_NAMES:
        case KEY_GO_DURATION:
        case KEY_MODULES:
        case KEY_PERCENT:
        case KEY_PORT:
        case KEY_SECTION:
        case KEY_SIZE:
        case KEY_STRING_LIST:
        case KEY_SYSCALLS:
        case KEY_UID:
        case KEY_UINT32:
        default:
                r = set_number(ctx, def, v);
        }
        if (r < 0)
                return r;
        return origin_record(ctx, def, v);
}

/* Environment values: one scalar, or for a list a comma-separated one ("0,1,read", as upstream). An empty
 * value that reaches here (the variable's empty_is_unset is false) is the empty list. */
static int set_from_env(LoadContext *ctx, const KeyDef *def, const char *value) {
        _cleanup_(scalar_list_done) ScalarList l = { 0 };
        size_t n = 1;

        if (def->type != KEY_SYSCALLS && def->type != KEY_ENV_NAMES && def->type != KEY_EGRESS_RULES &&
            def->type != KEY_MODULES) {
                Scalar v = { .text = (char *) value, .len = strlen(value) };
                return set_scalar(ctx, def, &v);
        }
        if (value[0] == '\0')
                return set_list(ctx, def, &l);

        for (const char *c = value; *c; c++)
                n += *c == ',';
        l.items = calloc(n, sizeof(Scalar));
        if (!l.items)
                return -ENOMEM;
        for (const char *p = value;; p++) {
                size_t len = strcspn(p, ",");
                const char *start = p, *end = p + len;

                while (start < end && (*start == ' ' || *start == '\t'))
                        start++;
                while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                        end--;
                l.items[l.n].text = strndup(start, (size_t) (end - start));
                if (!l.items[l.n].text)
                        return -ENOMEM;
                l.items[l.n].len = (size_t) (end - start);
                l.n++;
                p += len;
                if (*p == '\0')
                        break;
        }
        for (size_t i = 0; i < l.n; i++)
                if (l.items[i].len == 0)
                        return fail_value(ctx, def,
                                          &(Scalar){ .text = (char *) value, .len = strlen(value) },
                                          "empty item in the comma-separated list");
        return set_list(ctx, def, &l);
}

/* libyaml's own words for a malformed file, with the line it stopped at. */
static int fail_yaml(LoadContext *ctx, const yaml_parser_t *p) {
        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (p->error == YAML_READER_ERROR)
                return config_error(ctx->reterr, -EINVAL, ctx->where, 0, NULL, NULL, 0,
                                    "malformed YAML: %s at byte %zu", p->problem ? p->problem : "unreadable",
                                    p->problem_offset);
        if (p->context)
                return config_error(ctx->reterr, -EINVAL, ctx->where, (unsigned) p->problem_mark.line + 1,
                                    NULL, NULL, 0, "malformed YAML: %s (%s at line %zu)",
                                    p->problem ? p->problem : "error", p->context, p->context_mark.line + 1);
        return config_error(ctx->reterr, -EINVAL, ctx->where, (unsigned) p->problem_mark.line + 1, NULL,
                            NULL, 0, "malformed YAML: %s", p->problem ? p->problem : "error");
}

/* The explicit tag of a node event, or NULL. */
static const char *event_tag(const yaml_event_t *e) {
        switch ((int) e->type) { /* a library's enum: default takes the rest */
        case YAML_SCALAR_EVENT:
                return (const char *) e->data.scalar.tag;
        case YAML_SEQUENCE_START_EVENT:
                return (const char *) e->data.sequence_start.tag;
        case YAML_MAPPING_START_EVENT:
                return (const char *) e->data.mapping_start.tag;
        default:
                return NULL;
        }
}

/* YAML's core schema tags (!!str, !!int, ...) say what every key's type says anyway. Any other tag
 * (!custom) asks for a meaning this loader does not give, so it is refused rather than ignored. */
static bool tag_is_known(const char *tag) {
        static const char *const known[] = {
                "tag:yaml.org,2002:bool", "tag:yaml.org,2002:float", "tag:yaml.org,2002:int",
                "tag:yaml.org,2002:map",  "tag:yaml.org,2002:null",  "tag:yaml.org,2002:seq",
                "tag:yaml.org,2002:str",
        };

        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                if (streq(tag, known[i]))
                        return true;
        return false;
}

/* The next event; key is what a refused tag is reported against (the key whose value is read), or NULL. */
/* Any failure here leaves the reader where it cannot tell which key comes next: ctx->broken. */
static int next_event(LoadContext *ctx, yaml_parser_t *p, const char *key, yaml_event_t *ret) {
        const char *tag;

        ctx->broken = true;
        if (!yaml_parser_parse(p, ret))
                return fail_yaml(ctx, p);
        if (ret->type == YAML_ALIAS_EVENT)
                return fail_key(ctx, (unsigned) ret->start_mark.line + 1, NULL,
                                "YAML aliases are not supported");
        tag = event_tag(ret);
        if (tag && !tag_is_known(tag))
                return config_error(ctx->reterr, -EINVAL, ctx->where, (unsigned) ret->start_mark.line + 1,
                                    key, tag, strlen(tag), "unknown YAML tag");
        ctx->broken = false;
        return 0;
}

static bool event_is_start(const yaml_event_t *e) {
        return e->type == YAML_MAPPING_START_EVENT || e->type == YAML_SEQUENCE_START_EVENT;
}

/* Reads past the rest of a list or mapping whose start event has been read, so that the next key can
 * be checked after an error in this one. */
static int skip_node_rest(LoadContext *ctx, yaml_parser_t *p) {
        for (unsigned depth = 1; depth > 0;) {
                _cleanup_(yaml_event_deletep) yaml_event_t e = { 0 };
                int r;

                r = next_event(ctx, p, NULL, &e);
                if (r < 0)
                        return r;
                if (event_is_start(&e))
                        depth++;
                else if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT)
                        depth--;
        }
        return 0;
}

/* Reads past a whole value (of an unknown key). */
static int skip_value(LoadContext *ctx, yaml_parser_t *p) {
        _cleanup_(yaml_event_deletep) yaml_event_t e = { 0 };
        int r;

        r = next_event(ctx, p, NULL, &e);
        if (r < 0)
                return r;
        return event_is_start(&e) ? skip_node_rest(ctx, p) : 0;
}

static unsigned event_line(const yaml_event_t *e) {
        return (unsigned) e->start_mark.line + 1;
}

/* A copy of a scalar event's text; libyaml gives a length, and the text may hold NUL bytes. */
static int scalar_from_event(const yaml_event_t *e, Scalar *ret) {
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
        size_t len = e->data.scalar.length;
        char *text;

        text = malloc(len + 1);
        if (!text)
                return -ENOMEM;
        memcpy(text, e->data.scalar.value, len);
        text[len] = '\0';
        *ret = (Scalar){ .text = text, .len = len, .line = event_line(e) };
        if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
                        if (streq(text, nulls[i]))
                                ret->null = true;
        return 0;
}

static const char *shape_name(yaml_event_type_t t) {
        return t == YAML_MAPPING_START_EVENT ? "a mapping" : "a list";
}

static int walk_mapping(LoadContext *ctx, yaml_parser_t *p, const char *prefix);

/* The items of a list; start is the SEQUENCE_START event. */
static int walk_list(LoadContext *ctx, yaml_parser_t *p, const KeyDef *def) {
        _cleanup_(scalar_list_done) ScalarList l = { 0 };
        size_t allocated = 0;
        int r, failed = 0;

        for (;;) {
                _cleanup_(yaml_event_deletep) yaml_event_t e = { 0 };

                r = next_event(ctx, p, def->name, &e);
                if (r < 0)
                        return r;
                if (e.type == YAML_SEQUENCE_END_EVENT)
                        break;
                if (e.type != YAML_SCALAR_EVENT) {
                        r = fail_key(ctx, event_line(&e), def->name, "expected a list of %s, found %s in it",
                                     def->type == KEY_SYSCALLS       ? "system call names or numbers"
                                     : def->type == KEY_ENV_NAMES    ? "environment variable names"
                                     : def->type == KEY_EGRESS_RULES ? "egress rules"
                                     : def->type == KEY_MODULES      ? "module names"
                                                                     : "strings",
                                     shape_name(e.type));
                        if (event_is_start(&e) && skip_node_rest(ctx, p) < 0)
                                return r;
                        failed = r; /* the rest is read, for the keys after it */
                        continue;
                }
                if (failed < 0)
                        continue;
                if (l.n == allocated) {
                        size_t na = allocated ? allocated * 2 : 16;
                        Scalar *items = reallocarray(l.items, na, sizeof(Scalar));
                        if (!items)
                                return -ENOMEM;
                        l.items = items;
                        allocated = na;
                }
                r = scalar_from_event(&e, &l.items[l.n]);
                if (r < 0)
                        return r;
                l.n++;
        }
        return failed < 0 ? failed : set_list(ctx, def, &l);
}

/* The value of a known key: its event has not been read yet. */
static int walk_value(LoadContext *ctx, yaml_parser_t *p, const KeyDef *def) {
        _cleanup_(yaml_event_deletep) yaml_event_t e = { 0 };
        bool is_list = def->type == KEY_SYSCALLS || def->type == KEY_STRING_LIST ||
                       def->type == KEY_ENV_NAMES || def->type == KEY_EGRESS_RULES ||
                       def->type == KEY_MODULES;
        int r;

        r = next_event(ctx, p, def->name, &e);
        if (r < 0)
                return r;

        switch ((int) e.type) { /* a library's enum: default takes the rest */

        case YAML_SCALAR_EVENT: {
                _cleanup_free_ char *text = NULL;
                Scalar v;

                r = scalar_from_event(&e, &v);
                if (r < 0)
                        return r;
                text = v.text;
                if (def->type == KEY_SECTION)
                        return v.null ? 0 : fail_value(ctx, def, &v, "expected a mapping");
                if (is_list) {
                        if (!v.null)
                                return fail_value(ctx, def, &v, "expected a list");
                        return set_list(ctx, def,
                                        &(ScalarList){ 0 }); /* "allowed_syscalls:" is an empty list */
                }
                return set_scalar(ctx, def, &v);
        }

        case YAML_MAPPING_START_EVENT:
                if (def->type == KEY_SECTION)
                        return walk_mapping(ctx, p, def->name);
                r = fail_key(ctx, event_line(&e), def->name, "expected %s, got a mapping",
                             is_list ? "a list" : "a single value");
                return skip_node_rest(ctx, p) < 0 ? -EINVAL : r;

        case YAML_SEQUENCE_START_EVENT:
                if (is_list)
                        return walk_list(ctx, p, def);
                r = fail_key(ctx, event_line(&e), def->name, "expected %s, got a list",
                             def->type == KEY_SECTION ? "a mapping" : "a single value");
                return skip_node_rest(ctx, p) < 0 ? -EINVAL : r;

        default:
                ctx->broken = true;
                return fail_key(ctx, event_line(&e), def->name, "unexpected YAML event");
        }
}

/* The keys of a mapping whose MAPPING_START has been read. prefix is the section ("app") or NULL. An
 * error in one key's value is collected and the next key read; only lost YAML structure stops. */
static int walk_mapping(LoadContext *ctx, yaml_parser_t *p, const char *prefix) {
        int r, failed = 0;

        for (;;) {
                _cleanup_(yaml_event_deletep) yaml_event_t e = { 0 };
                _cleanup_free_ char *name = NULL;
                const KeyDef *def;
                Scalar key;

                r = next_event(ctx, p, prefix, &e);
                if (r < 0)
                        return r;
                if (e.type == YAML_MAPPING_END_EVENT)
                        return failed;
                if (e.type != YAML_SCALAR_EVENT) {
                        ctx->broken = true; /* which value belongs to such a key is not worth guessing */
                        return fail_key(ctx, event_line(&e), prefix, "keys must be single values, not %s",
                                        shape_name(e.type));
                }

                r = scalar_from_event(&e, &key);
                if (r < 0)
                        return r;
                if (memchr(key.text, 0, key.len)) {
                        r = fail_key(ctx, key.line, key.text, "unknown key");
                        free(key.text);
                        def = NULL;
                } else {
                        if (prefix) {
                                r = asprintf(&name, "%s.%s", prefix, key.text);
                                free(key.text);
                                if (r < 0)
                                        return -ENOMEM;
                        } else
                                name = key.text;
                        def = key_lookup(name);
                        r = def ? walk_value(ctx, p, def) : fail_key(ctx, key.line, name, "unknown key");
                }
                if (r == -ENOMEM || ctx->broken)
                        return r;
                if (!def && skip_value(ctx, p) < 0)
                        return r;
                if (r < 0)
                        failed = r;
        }
}

/* A whole file: one document holding one mapping, or nothing at all. */
static int walk_stream(LoadContext *ctx, yaml_parser_t *p) {
        _cleanup_(yaml_event_deletep) yaml_event_t stream = { 0 }, doc = { 0 }, top = { 0 }, doc_end = { 0 },
                                                   end = { 0 };
        int r;

        r = next_event(ctx, p, NULL, &stream);
        if (r < 0)
                return r;
        r = next_event(ctx, p, NULL, &doc);
        if (r < 0)
                return r;
        if (doc.type == YAML_STREAM_END_EVENT)
                return 0; /* empty, or only comments */

        r = next_event(ctx, p, NULL, &top);
        if (r < 0)
                return r;
        if (top.type == YAML_MAPPING_START_EVENT) {
                r = walk_mapping(ctx, p, NULL);
                if (r < 0)
                        return r;
        } else if (top.type == YAML_SCALAR_EVENT) {
                _cleanup_free_ char *text = NULL;
                Scalar v;

                r = scalar_from_event(&top, &v);
                if (r < 0)
                        return r;
                text = v.text;
                if (!v.null)
                        return config_error(ctx->reterr, -EINVAL, ctx->where, v.line, NULL, v.text, v.len,
                                            "expected a mapping of keys");
        } else
                return fail_key(ctx, event_line(&top), NULL, "expected a mapping of keys, got a list");

        r = next_event(ctx, p, NULL, &doc_end);
        if (r < 0)
                return r;
        r = next_event(ctx, p, NULL, &end);
        if (r < 0)
                return r;
        if (end.type != YAML_STREAM_END_EVENT)
                return fail_key(ctx, event_line(&end), NULL, "only one YAML document is allowed");
        return 0;
}

/* Reads a whole regular file of at most CONFIG_FILE_SIZE_MAX bytes. */
static int read_config_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        /* O_NONBLOCK: a FIFO put there by mistake must not hang us; fstat() then refuses it. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;

        return read_full_fd(fd, CONFIG_FILE_SIZE_MAX, ret, ret_len);
}

static int load_file(LoadContext *ctx, const char *path) {
        _cleanup_free_ char *buf = NULL;
        char size_text[NUMBER_TEXT_MAX];
        size_t len = 0;
        int r;

        r = read_config_file(path, &buf, &len);
        if (r == -ENOENT)
                return 0; /* no file, or a drop-in removed under us: nothing to apply */
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG) {
                format_size(CONFIG_FILE_SIZE_MAX, size_text);
                return config_error(ctx->reterr, -EFBIG, path, 0, NULL, NULL, 0, "larger than %s, refused",
                                    size_text);
        }
        if (r == -EBADFD)
                return config_error(ctx->reterr, -EINVAL, path, 0, NULL, NULL, 0, "not a regular file");
        if (r < 0)
                return config_error(ctx->reterr, r, path, 0, NULL, NULL, 0, "cannot read: %s", strerror(-r));

        _cleanup_(yaml_parser_deletep) yaml_parser_t parser = { 0 };
        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *) buf, len);
        ctx->where = path;
        ctx->broken = false;
        return walk_stream(ctx, &parser);
}

static int path_compare(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The paths of dir's *.yaml files, sorted; none when dir does not exist. */
static int dropin_list(const char *dir, char ***ret) {
        _cleanup_(strv_freep) char **paths = NULL;
        _cleanup_(closedirp) DIR *d = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;

        d = opendir(dir);
        if (!d && errno != ENOENT)
                return -errno;
        for (errno = 0; d && (de = readdir(d)); errno = 0) {
                size_t len = strlen(de->d_name);

                if (de->d_name[0] == '.' || len <= 5 || !streq(de->d_name + len - 5, ".yaml"))
                        continue;
                if (n + 1 >= allocated) {
                        size_t na = allocated ? allocated * 2 : 16;
                        char **p = reallocarray(paths, na, sizeof(char *));
                        if (!p)
                                return -ENOMEM;
                        paths = p;
                        allocated = na;
                }
                if (asprintf(&paths[n], "%s/%s", dir, de->d_name) < 0) {
                        paths[n] = NULL;
                        return -ENOMEM;
                }
                paths[++n] = NULL;
        }
        if (d && errno != 0)
                return -errno;
        if (!paths) {
                paths = calloc(1, sizeof(char *));
                if (!paths)
                        return -ENOMEM;
        }
        /* Same directory prefix for all, so this is the strcmp() order of the names. */
        qsort(paths, n, sizeof(char *), path_compare);
        *ret = TAKE_PTR(paths);
        return 0;
}

/* As getenv(), on the array given: the first NAME= wins. */
static const char *env_lookup(char **env, const char *name) {
        size_t n = strlen(name);

        for (char **e = env; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}

static int load_env(LoadContext *ctx, char **env) {
        int r, failed = 0;

        for (size_t i = 0; i < ELEMENTSOF(env_overrides); i++) {
                const EnvOverride *o = &env_overrides[i];
                _cleanup_free_ char *where = NULL;
                const char *value;

                value = env_lookup(env, o->variable);
                if (!value || (value[0] == '\0' && o->empty_is_unset))
                        continue;
                if (asprintf(&where, "environment variable %s", o->variable) < 0)
                        return -ENOMEM;
                ctx->where = where;
                r = set_from_env(ctx, key_lookup(o->key), value);
                ctx->where = NULL;
                if (r == -ENOMEM)
                        return r;
                failed = failed ?: r; /* and the next variable is checked too */
        }
        return failed;
}

/* What no single key can check: the UID pool, once every source is in. The key set last is blamed. */
static int check_uid_range(LoadContext *ctx) {
        const KeyDef *min_def = key_lookup("uid_min"), *max_def = key_lookup("uid_max");
        const KeyOrigin *min_o = &ctx->origins[min_def - keys], *max_o = &ctx->origins[max_def - keys];
        bool blame_min = min_o->seq > max_o->seq;
        const KeyOrigin *o = blame_min ? min_o : max_o;
        const char *key = blame_min ? "uid_min" : "uid_max";
        /* Neither key set: the values the caller started from are wrong, there is no source to name. */
        const char *where = o->where ?: "the configuration before loading";
        size_t value_len = o->value ? strlen(o->value) : 0;
        uint32_t lo = ctx->cfg->uid_min, hi = ctx->cfg->uid_max;

        if (lo > hi && blame_min)
                return config_error(ctx->reterr, -EINVAL, where, o->line, key, o->value, value_len,
                                    "must not be greater than uid_max (%" PRIu32 ")", hi);
        if (lo > hi)
                return config_error(ctx->reterr, -EINVAL, where, o->line, key, o->value, value_len,
                                    "must not be less than uid_min (%" PRIu32 ")", lo);
        if ((uint64_t) hi - lo + 1 > UID_POOL_MAX)
                return config_error(ctx->reterr, -EINVAL, where, o->line, key, o->value, value_len,
                                    "the pool uid_min..uid_max (%" PRIu32 "..%" PRIu32
                                    ") holds more than %" PRIu64 " UIDs",
                                    lo, hi, UID_POOL_MAX);
        return 0;
}

int config_load(Config *cfg, const char *main_file, const char *dropin_dir, char **env,
                ConfigError *reterr) {
        _cleanup_(load_context_done) LoadContext ctx = { .cfg = cfg, .reterr = reterr };
        _cleanup_(strv_freep) char **dropins = NULL;
        int r, failed = 0;

        assert(cfg);

        /* Every source is read even after an error, so that one pass reports every error. */
        r = load_file(&ctx, main_file ?: CONFIG_FILE_MAIN);
        if (r == -ENOMEM)
                return r;
        failed = r;

        if (!dropin_dir)
                dropin_dir = CONFIG_FILE_DROPIN_DIR;
        if (dropin_dir[0] != '\0') {
                r = dropin_list(dropin_dir, &dropins);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = config_error(reterr, r, dropin_dir, 0, NULL, NULL, 0, "cannot read: %s",
                                         strerror(-r));
                        if (r == -ENOMEM)
                                return r;
                        failed = failed ?: r;
                }
                for (char **d = dropins; d && *d; d++) {
                        r = load_file(&ctx, *d);
                        if (r == -ENOMEM)
                                return r;
                        failed = failed ?: r;
                }
        }

        r = load_env(&ctx, env);
        if (r == -ENOMEM)
                return r;
        failed = failed ?: r;
        if (failed < 0)
                return failed; /* the UID range of a refused configuration means nothing */

        return check_uid_range(&ctx);
}

/* In double quotes, which YAML reads back byte for byte; what config_load() admits never needs more
 * than \" and \\, the rest is escaped in case some other code put it there. */
static void fput_quoted(FILE *f, const char *s) {
        (void) fputc('"', f);
        for (const char *c = s ?: ""; *c; c++) {
                unsigned char b = (unsigned char) *c;
                if (b == '"' || b == '\\')
                        (void) fprintf(f, "\\%c", b);
                else if (b < 0x20 || b == 0x7f)
                        (void) fprintf(f, "\\x%02x", b);
                else
                        (void) fputc(b, f);
        }
        (void) fputc('"', f);
}

int config_format(const Config *cfg, FILE *f, bool show_secrets) {
        char text[NUMBER_TEXT_MAX];

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                const KeyDef *def = &keys[i];
                const void *field = key_field_const(cfg, def);

                if (def->type == KEY_SECTION || def->type == KEY_STRING_LIST)
                        continue;
                /* An unset secret (app.key) has no value config_load() reads back: left out. */
                if (def->type == KEY_SECRET && !*(char *const *) field) {
                        if (!show_secrets)
                                (void) fprintf(f, "%s: <unset>\n", def->name);
                        continue;
                }
                (void) fprintf(f, "%s: ", def->name);
                switch (def->type) {
                case KEY_STRING:
                case KEY_PATH:
                case KEY_INTERPRETER:
                case KEY_PROXY:
                        fput_quoted(f, *(char *const *) field);
                        break;
                case KEY_SECRET:
                        if (show_secrets)
                                fput_quoted(f, *(char *const *) field);
                        else
                                (void) fputs("<set>", f);
                        break;
                case KEY_PORT:
                        (void) fprintf(f, "%" PRIu16, *(const uint16_t *) field);
                        break;
                case KEY_UINT32:
                case KEY_UID:
                        (void) fprintf(f, "%" PRIu32, *(const uint32_t *) field);
                        break;
                case KEY_BOOL:
                        (void) fputs(*(const bool *) field ? "true" : "false", f);
                        break;
                case KEY_SIZE:
                        format_size(*(const uint64_t *) field, text);
                        (void) fputs(text, f);
                        break;
                case KEY_DURATION:
                        format_duration(*(const uint64_t *) field, /* with_unit= */ false, text);
                        (void) fputs(text, f);
                        break;
                case KEY_GO_DURATION:
                        format_go_duration(*(const uint64_t *) field, text);
                        (void) fputs(text, f);
                        break;
                case KEY_PERCENT:
                        (void) fprintf(f, "%" PRIu32 "%%", *(const uint32_t *) field);
                        break;
                case KEY_SYSCALLS:
                case KEY_ENV_NAMES:
                case KEY_EGRESS_RULES:
                case KEY_MODULES: {
                        char *const *l = *(char **const *) field;
                        (void) fputc('[', f);
                        for (size_t j = 0; l && l[j]; j++) {
                                if (j > 0)
                                        (void) fputs(", ", f);
                                fput_quoted(f, l[j]);
                        }
                        (void) fputc(']', f);
                        break;
                }
                case KEY_SECTION:
                case KEY_STRING_LIST:
                default:
                        assert(false);
                }
                (void) fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}

int config_setup(Config *cfg, const char *file) {
        _cleanup_(config_error_done) ConfigError err = { 0 };
        int r;

        r = config_init_defaults(cfg);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the configuration: %m");
        if (!file && access(CONFIG_FILE_PUBLISHED, F_OK) >= 0)
                file = CONFIG_FILE_PUBLISHED;
        r = config_load(cfg, file, file ? "" : NULL, environ, &err);
        if (r < 0) {
                if (err.n > 1)
                        log_error("Invalid configuration: %s (and %zu more errors: difysandbox check-config "
                                  "lists them)",
                                  err.message, err.n - 1);
                else if (err.message)
                        log_error("Invalid configuration: %s", err.message);
                else
                        log_error_errno(r, "Cannot load the configuration: %m");
                config_done(cfg);
        }
        return r;
}

int config_format_for_worker(const Config *cfg, FILE *f) {
        char digest[KEY_DIGEST_TEXT_SIZE];
        Config w = *cfg; /* borrows cfg's values: nothing here is freed */
        char empty[] = "";
        int r;

        if (cfg->api_key) {
                r = key_digest_make(cfg->api_key, digest);
                if (r < 0)
                        return r;
                w.api_key_digest = digest;
        }
        w.api_key = NULL;
        w.python_pip_mirror_url = w.npm_registry = empty;
        w.proxy_socks5 = w.proxy_http = w.proxy_https = empty;
        return config_format(&w, f, /* show_secrets= */ true);
}

/* Zeroes s where it is, leaving an empty string. */
static void scrub(char *s) {
        if (s)
                explicit_bzero(s, strlen(s));
}

int config_scrub_for_worker(Config *cfg) {
        int r;

        if (cfg->api_key) {
                char digest[KEY_DIGEST_TEXT_SIZE];
                char *copy;

                r = key_digest_make(cfg->api_key, digest);
                if (r < 0)
                        return r;
                copy = strdup(digest);
                if (!copy)
                        return -ENOMEM;
                free(cfg->api_key_digest);
                cfg->api_key_digest = copy;
                scrub(cfg->api_key);
                free(cfg->api_key);
                cfg->api_key = NULL;
        }
        scrub(cfg->python_pip_mirror_url);
        scrub(cfg->npm_registry);
        scrub(cfg->proxy_socks5);
        scrub(cfg->proxy_http);
        scrub(cfg->proxy_https);
        return 0;
}

int config_check_main(const char *file, bool show_secrets) {
        _cleanup_(config_error_done) ConfigError err = { 0 };
        Config cfg;
        int r;

        r = config_init_defaults(&cfg);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the configuration: %m");

        /* A file named on the command line must be there; only the default one may be missing. */
        if (file && access(file, F_OK) < 0) {
                r = -errno;
                config_done(&cfg);
                return log_error_errno(r, "%s: %m", file);
        }

        r = config_load(&cfg, file, file ? "" : NULL, environ, &err);
        if (r < 0) {
                config_done(&cfg);
                if (!err.all)
                        return log_error_errno(r, "Cannot load the configuration: %m");
                /* One line per error, each with its file, line, key and reason. */
                for (char *line = err.all, *end; (end = strchr(line, '\n')); line = end + 1)
                        log_error_errno(r, "%.*s", (int) (end - line), line);
                if (err.n > 1)
                        log_error("%zu errors, the configuration is refused", err.n);
                return r;
        }

        config_check_warnings(&cfg, file);
        r = config_format(&cfg, stdout, show_secrets);
        config_done(&cfg);
        if (r >= 0 && fflush(stdout) != 0)
                r = -errno;
        if (r < 0)
                return log_error_errno(r, "Cannot print the configuration: %m");
        return 0;
}
