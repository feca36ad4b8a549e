/* config-file: see config-file.h. */

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

#include "cleanup.h"
#include "config-file.h"
#include "config.h"
#include "log.h"
#include "parse.h"
#include "sandbox/seccomp-policy.h"

#define CONFIG_FILE_SIZE_MAX (UINT64_C(1) << 20) /* a larger config file is a mistake, not a config */
#define MESSAGE_VALUE_MAX 128 /* bytes of a refused value or key quoted in a message; more is cut, "..." */
#define UID_POOL_MAX UINT64_C(65536)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define NUMBER_TEXT_MAX 64 /* "18446744073709551615us", "5124095576h1m5s551615us": well below */

typedef enum KeyType {
        KEY_SECTION,       /* a mapping of more keys: app, proxy */
        KEY_STRING,        /* text, may be empty */
        KEY_SECRET,        /* text, not empty; config_format() prints <set> */
        KEY_PATH,          /* an absolute path */
        KEY_UPSTREAM_PATH, /* an absolute path; empty means the built-in default, as upstream */
        KEY_PORT,          /* 1..65535 */
        KEY_UINT32,        /* min..UINT32_MAX */
        KEY_UID,           /* 1..4294967294: never 0, never (uid_t) -1 */
        KEY_BOOL,          /* parse_boolean() */
        KEY_SIZE,          /* parse_size(): bytes, K/M/G/T */
        KEY_DURATION,      /* parse_duration(): seconds, "2.5", "500ms" */
        KEY_GO_DURATION,   /* Go's time.ParseDuration(): "30m", "1h30m"; empty means the default */
        KEY_PERCENT,       /* "150%", or a plain number of percent; 1..100000 */
        KEY_SYSCALLS,      /* a list of syscall names or numbers (of this architecture) */
        KEY_STRING_LIST,   /* a list of strings, checked and then dropped */
} KeyType;

typedef struct KeyDef {
        const char *name; /* dotted: app.port is "port" in the mapping "app" */
        KeyType type;
        size_t offset; /* of the field in Config */
        uint64_t min;  /* for numbers, sizes and durations */
} KeyDef;

#define F(field) offsetof(Config, field)

/* Every key a config file may hold, in the order config_format() prints them. The upstream keys come first
 * and mean what they mean in langgenius/dify-sandbox's config.yaml (DESIGN §1). */
/* clang-format off */
static const KeyDef keys[] = {
        /* name                          type               field                     min */
        { "app",                         KEY_SECTION },
        { "app.port",                    KEY_PORT,          F(port),                  1 },
        { "app.debug",                   KEY_BOOL,          F(debug) },
        { "app.key",                     KEY_SECRET,        F(api_key) },
        { "max_workers",                 KEY_UINT32,        F(max_workers),           1 }, /* upstream hangs on 0 */
        { "max_requests",                KEY_UINT32,        F(max_requests),          1 },
        { "worker_timeout",              KEY_DURATION,      F(worker_timeout_usec),   USEC_PER_MSEC },
        { "python_path",                 KEY_UPSTREAM_PATH, F(python_path) },
        { "python_lib_path",             KEY_STRING_LIST }, /* the runtime tree decides what runs see */
        { "python_pip_mirror_url",       KEY_STRING,        F(python_pip_mirror_url) },
        { "python_deps_update_interval", KEY_GO_DURATION,
                                                            F(python_deps_update_interval_usec),
                                                                                      USEC_PER_SEC },
        { "nodejs_path",                 KEY_UPSTREAM_PATH, F(nodejs_path) },
        { "enable_network",              KEY_BOOL,          F(enable_network) },
        { "enable_preload",              KEY_BOOL,          F(enable_preload) },
        { "allowed_syscalls",            KEY_SYSCALLS,      F(allowed_syscalls) },
        { "proxy",                       KEY_SECTION },
        { "proxy.socks5",                KEY_STRING,        F(proxy_socks5) },
        { "proxy.http",                  KEY_STRING,        F(proxy_http) },
        { "proxy.https",                 KEY_STRING,        F(proxy_https) },
        /* ours: difysandbox.conf(5) */
        { "memory_max",                  KEY_SIZE,          F(memory_max),            UINT64_C(16) << 20 },
        { "cpu_quota",                   KEY_PERCENT,       F(cpu_quota_percent),     1 },
        { "cpu_time",                    KEY_DURATION,      F(cpu_time_usec),         USEC_PER_SEC },
        { "tasks_max",                   KEY_UINT32,        F(tasks_max),             8 },
        { "output_max",                  KEY_SIZE,          F(output_max),            UINT64_C(1) << 10 },
        { "code_max",                    KEY_SIZE,          F(code_max),              1 },
        { "tmp_size",                    KEY_SIZE,          F(tmp_size),              UINT64_C(1) << 20 },
        { "open_files_max",              KEY_UINT32,        F(open_files_max),        32 },
        { "uid_min",                     KEY_UID,           F(uid_min),               1 },
        { "uid_max",                     KEY_UID,           F(uid_max),               1 },
        { "state_dir",                   KEY_PATH,          F(state_dir) },
        { "runtime_dir",                 KEY_PATH,          F(runtime_dir) },
        { "enter_library",               KEY_PATH,          F(enter_library) },
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
        { "DIFYSANDBOX_TMP_SIZE",            "tmp_size",                    false },
        { "DIFYSANDBOX_OPEN_FILES_MAX",      "open_files_max",              false },
        { "DIFYSANDBOX_UID_MIN",             "uid_min",                     false },
        { "DIFYSANDBOX_UID_MAX",             "uid_max",                     false },
        { "DIFYSANDBOX_STATE_DIR",           "state_dir",                   false },
        { "DIFYSANDBOX_RUNTIME_DIR",         "runtime_dir",                 false },
        { "DIFYSANDBOX_ENTER_LIBRARY",       "enter_library",               false },
};

/* Why the names of seccomp_never_allow() are refused in allowed_syscalls. The list itself is the policy's;
 * a name it gains before this table does is still refused, with the generic reason. */
static const struct {
        const char *name;
        const char *why;
} never_allow_why[] = {
        { "acct",              "administers the host" },
        { "add_key",           "reaches the kernel keyrings" },
        { "bpf",               "loads programs into the kernel" },
        { "capset",            "changes capabilities" },
        { "chroot",            "changes the root directory" },
        { "clock_adjtime",     "changes the host's clock" },
        { "clock_settime",     "changes the host's clock" },
        { "delete_module",     "changes the running kernel" },
        { "execve",            "starts another program" },
        { "execveat",          "starts another program" },
        { "fanotify_init",     "watches whole filesystems" },
        { "finit_module",      "changes the running kernel" },
        { "fork",              "creates processes" },
        { "fsconfig",          "changes the mount tree" },
        { "fsmount",           "changes the mount tree" },
        { "fsopen",            "changes the mount tree" },
        { "fspick",            "changes the mount tree" },
        { "init_module",       "changes the running kernel" },
        { "io_uring_enter",    "io_uring works around seccomp" },
        { "io_uring_register", "io_uring works around seccomp" },
        { "io_uring_setup",    "io_uring works around seccomp" },
        { "ioperm",            "reaches hardware I/O ports" },
        { "iopl",              "reaches hardware I/O ports" },
        { "kcmp",              "inspects other processes" },
        { "kexec_file_load",   "replaces the running kernel" },
        { "kexec_load",        "replaces the running kernel" },
        { "keyctl",            "reaches the kernel keyrings" },
        { "lookup_dcookie",    "administers the host" },
        { "mount",             "changes the mount tree" },
        { "mount_setattr",     "changes the mount tree" },
        { "move_mount",        "changes the mount tree" },
        { "name_to_handle_at", "opens files around path checks" },
        { "open_by_handle_at", "opens files around path checks" },
        { "open_tree",         "changes the mount tree" },
        { "perf_event_open",   "exposes kernel and hardware internals" },
        { "personality",       "can turn off address space randomization" },
        { "pidfd_getfd",       "takes files from other processes" },
        { "pivot_root",        "changes the mount tree" },
        { "process_madvise",   "reaches into other processes" },
        { "process_vm_readv",  "reaches into other processes" },
        { "process_vm_writev", "reaches into other processes" },
        { "ptrace",            "reaches into other processes" },
        { "quotactl",          "administers the host" },
        { "reboot",            "administers the host" },
        { "request_key",       "reaches the kernel keyrings" },
        { "setdomainname",     "administers the host" },
        { "setfsgid",          "changes credentials" },
        { "setfsuid",          "changes credentials" },
        { "setgid",            "changes credentials" },
        { "setgroups",         "changes credentials" },
        { "sethostname",       "administers the host" },
        { "setns",             "enters other namespaces" },
        { "setregid",          "changes credentials" },
        { "setresgid",         "changes credentials" },
        { "setresuid",         "changes credentials" },
        { "setreuid",          "changes credentials" },
        { "settimeofday",      "changes the host's clock" },
        { "setuid",            "changes credentials" },
        { "swapoff",           "administers the host" },
        { "swapon",            "administers the host" },
        { "syslog",            "reads the kernel log" },
        { "umount2",           "changes the mount tree" },
        { "unshare",           "creates namespaces" },
        { "uselib",            "loads libraries the obsolete way" },
        { "userfaultfd",       "widens kernel race windows" },
        { "vfork",             "creates processes" },
        { "vhangup",           "administers the host" },
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
        unsigned seq;
        KeyOrigin origins[ELEMENTSOF(keys)];
} LoadContext;

static char **strv_free(char **l) {
        if (l)
                for (char **s = l; *s; s++)
                        free(*s);
        free(l);
        return NULL;
}

static void strv_freep(char ***l) {
        (void) strv_free(*l);
}

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
        free(e->message);
        e->message = NULL;
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

/* Sets reterr's message to "WHERE[:LINE][: KEY][: 'VALUE']: REASON" and returns error, or -ENOMEM. */
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

        free(reterr->message);
        reterr->message = TAKE_PTR(buf);
        return error;
}

static int __attribute__((format(printf, 8, 9)))
config_error(ConfigError *reterr, int error, const char *where, unsigned line, const char *key, const char *value,
             size_t value_len, const char *format, ...) {
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
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "%s", usec / USEC_PER_SEC, with_unit ? "s" : "");
        else if (usec % USEC_PER_MSEC == 0)
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else
                (void) snprintf(buf, NUMBER_TEXT_MAX, "%" PRIu64 "us", usec);
}

/* Go's time.ParseDuration() syntax, which upstream uses for python_deps_update_interval: decimal numbers,
 * each with an optional fraction and a unit (ns, us, µs, ms, s, m, h), in sequence: "30m", "1h30m",
 * "1.5h". "0" needs no unit. No sign: a negative interval means nothing here. Precision below a
 * microsecond is dropped. Returns -EINVAL, -ERANGE or -ENOMEM. */
static int parse_go_duration(const char *s, uint64_t *ret_usec) {
        /* clang-format off */
        static const struct {
                const char *unit;
                uint64_t nsec;
                unsigned frac_digits; /* digits of a fraction that still count: nsec = 10^frac_digits * k */
        } units[] = {
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
        static const char digits[] = "0123456789";
        uint64_t total = 0;
        const char *p = s;

        if (streq(s, "0")) {
                *ret_usec = 0;
                return 0;
        }
        if (*s == '\0')
                return -EINVAL;

        while (*p != '\0') {
                size_t n_whole = strspn(p, digits), n_frac = 0, n_unit;
                const char *q = p + n_whole, *frac = NULL;
                uint64_t whole = 0, v;
                size_t u;
                int r;

                if (*q == '.') {
                        frac = q + 1;
                        n_frac = strspn(frac, digits);
                        q = frac + n_frac;
                }
                if (n_whole == 0 && n_frac == 0)
                        return -EINVAL;
                n_unit = strcspn(q, "0123456789.");
                for (u = 0; u < ELEMENTSOF(units); u++)
                        if (strlen(units[u].unit) == n_unit && strncmp(q, units[u].unit, n_unit) == 0)
                                break;
                if (u >= ELEMENTSOF(units))
                        return -EINVAL;

                if (n_whole > 0) {
                        _cleanup_free_ char *t = strndup(p, n_whole);
                        if (!t)
                                return -ENOMEM;
                        r = parse_uint64(t, &whole);
                        if (r < 0)
                                return r;
                }
                if (whole > UINT64_MAX / units[u].nsec)
                        return -ERANGE;
                v = whole * units[u].nsec;

                if (n_frac > 0 && units[u].frac_digits > 0) {
                        size_t k = n_frac < units[u].frac_digits ? n_frac : units[u].frac_digits;
                        _cleanup_free_ char *t = strndup(frac, k);
                        uint64_t f, scale = units[u].nsec;

                        if (!t)
                                return -ENOMEM;
                        r = parse_uint64(t, &f);
                        if (r < 0)
                                return r;
                        for (size_t i = 0; i < k; i++)
                                scale /= 10;
                        if (v > UINT64_MAX - f * scale) /* f * scale < nsec: no overflow there */
                                return -ERANGE;
                        v += f * scale;
                }
                if (total > UINT64_MAX - v)
                        return -ERANGE;
                total += v;
                p = q + n_unit;
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

static int set_string(LoadContext *ctx, const KeyDef *def, const Scalar *v) {
        char **field = key_field(ctx->cfg, def);
        const char *s = v->null ? "" : v->text;
        char *copy;
        int r;

        if (!string_is_clean(s, strlen(s)))
                return fail_value(ctx, def, v, "must be valid UTF-8 without control characters");
        if (def->type == KEY_UPSTREAM_PATH && s[0] == '\0') {
                r = default_string(def, &copy);
                if (r < 0)
                        return r;
        } else {
                if (def->type == KEY_SECRET && s[0] == '\0')
                        return fail_value(ctx, def, v, "must not be empty");
                if (IN_SET_PATH(def->type) && s[0] != '/')
                        return fail_value(ctx, def, v, "must be an absolute path");
                copy = strdup(s);
                if (!copy)
                        return -ENOMEM;
        }
        free(*field);
        *field = copy;
        return 0;
}
