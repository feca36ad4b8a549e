/* top: see top.h. */

#include "top.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/fileio.h"
#include "common/parse.h"
#include "common/stats.h"
#include "common/time-util.h"
#include "ctl/ctl.h"
#include "runtime/runtime.h"

#define TOP_INTERVAL_USEC USEC_PER_SEC
#define TOP_WIDTH_DEFAULT 80U
#define TOP_WIDTH_MAX 400U
#define TOP_SCOPES_MAX 4096U
#define RUNS_SLICE_PATH "difysandbox.slice/difysandbox-runs.slice"
#define SCOPE_PREFIX "difysandbox-run-"
#define SMALL_FILE_MAX 4096U
#define PROC_LOCKS_MAX (16U << 20)

typedef enum TopSort {
        TOP_SORT_CPU,
        TOP_SORT_MEMORY,
        TOP_SORT_AGE,
        _TOP_SORT_MAX,
} TopSort;

static const char *const sort_names[_TOP_SORT_MAX] = {
        [TOP_SORT_CPU] = "cpu",
        [TOP_SORT_MEMORY] = "memory",
        [TOP_SORT_AGE] = "age",
};

typedef struct TopScope {
        char name[64];
        const char *language; /* a runtime's name, or "?" */
        uint64_t age_usec, cpu_usec, memory;
        bool has_cpu, has_memory;
} TopScope;

typedef struct Top {
        const Config *cfg;
        Stats *stats;
        StatsSnapshot prev;
        uint64_t prev_usec;
        bool have_prev;
        TopSort sort;
        bool tty;
        unsigned width, height;
        FILE *out;
} Top;

/* ---- the screen: one line at a time, cut to the width ---- */

static __attribute__((format(printf, 2, 3))) void line(Top *t, const char *format, ...) {
        char buf[TOP_WIDTH_MAX + 1];
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(buf, (size_t) t->width + 1, format, ap); /* cut, never wrapped */
        va_end(ap);
        (void) fputs(buf, t->out);
        (void) fputs(t->tty ? "\033[K\n" : "\n", t->out);
}

static void terminal_size(Top *t) {
        struct winsize ws;

        t->width = TOP_WIDTH_DEFAULT;
        t->height = 24;
        if (t->tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
                t->width = ws.ws_col < TOP_WIDTH_MAX ? ws.ws_col : TOP_WIDTH_MAX;
                t->height = ws.ws_row > 0 ? ws.ws_row : t->height;
        }
}

/* ---- the admission queue: requests in flight minus runs running, from their flock()s ---- */

typedef struct LockSet {
        dev_t *dev;
        uint64_t *ino;
        size_t n;
} LockSet;

static void lock_set_done(LockSet *s) {
        free(s->dev);
        free(s->ino);
        *s = (LockSet){ 0 };
}

/* The inodes that hold a FLOCK now, from /proc/locks ("1: FLOCK ADVISORY WRITE 1234 00:1a:5678 0 EOF";
 * waiters are "1: -> FLOCK ...", and are not holders). */
static int lock_set_read(LockSet *ret) {
        _cleanup_free_ char *text = NULL;
        LockSet s = { 0 };
        size_t cap = 0;
        int r;

        r = read_full_file("/proc/locks", PROC_LOCKS_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (char *p = text, *next; p && *p; p = next) {
                unsigned major, minor;
                uint64_t ino;
                char type[16];

                next = strchr(p, '\n');
                if (next)
                        *next++ = '\0';
                if (sscanf(p, "%*u: %15s %*s %*s %*d %x:%x:%" SCNu64, type, &major, &minor, &ino) != 4 ||
                    !streq(type, "FLOCK"))
                        continue;
                if (s.n == cap) {
                        size_t ncap = cap ? cap * 2 : 64;
                        dev_t *d = reallocarray(s.dev, ncap, sizeof(*d));

                        if (d)
                                s.dev = d;
                        uint64_t *i = d ? reallocarray(s.ino, ncap, sizeof(*i)) : NULL;
                        if (!i) {
                                lock_set_done(&s);
                                return -ENOMEM;
                        }
                        s.ino = i;
                        cap = ncap;
                }
                s.dev[s.n] = makedev(major, minor);
                s.ino[s.n++] = ino;
        }
        *ret = s;
        return 0;
}

static bool lock_set_has(const LockSet *s, dev_t dev, uint64_t ino) {
        for (size_t i = 0; i < s->n; i++)
                if (s->ino[i] == ino && s->dev[i] == dev)
                        return true;
        return false;
}

/* Files of <state_dir>/admission/<sub> held now. */
static int count_held(const Top *t, const LockSet *locks, const char *sub, unsigned *ret) {
        _cleanup_free_ char *path = NULL;
        _cleanup_(closedirp) DIR *d = NULL;
        unsigned n = 0;
        struct dirent *de;

        if (asprintf(&path, "%s/admission/%s", t->cfg->state_dir, sub) < 0)
                return -ENOMEM;
        d = opendir(path);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] == '.')
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    lock_set_has(locks, st.st_dev, (uint64_t) st.st_ino))
                        n++;
        }
        *ret = n;
        return 0;
}

/* -1 when unknown (no admission state yet, or /proc/locks unreadable). */
static long queue_length(const Top *t) {
        _cleanup_(lock_set_done) LockSet locks = { 0 };
        unsigned requests, workers;

        if (lock_set_read(&locks) < 0 || count_held(t, &locks, "requests", &requests) < 0 ||
            count_held(t, &locks, "workers", &workers) < 0)
                return -1;
        return requests > workers ? (long) (requests - workers) : 0;
}

/* ---- the runs' scopes, from their cgroups ---- */

static int read_u64_file(const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;

        int r = read_full_file(path, SMALL_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = '\0';
        return parse_uint64(text, ret);
}

/* usage_usec of cgroup v2's cpu.stat (there whether or not the cpu controller is on), else v1 cpuacct. */
static bool scope_cpu(const char *v2dir, const char *name, uint64_t *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        uint64_t ns;

        if (asprintf(&path, "%s/%s/cpu.stat", v2dir, name) >= 0 &&
            read_full_file(path, SMALL_FILE_MAX, &text, NULL) >= 0) {
                const char *p = strstr(text, "usage_usec ");

                if (p && sscanf(p, "usage_usec %" SCNu64, ret) == 1)
                        return true;
        }
        free(path);
        if (asprintf(&path, "/sys/fs/cgroup/cpuacct/" RUNS_SLICE_PATH "/%s/cpuacct.usage", name) >= 0 &&
            read_u64_file(path, &ns) >= 0) {
                *ret = ns / 1000;
                return true;
        }
        return false;
}

/* memory.current of cgroup v2, else v1's memory.usage_in_bytes. */
static bool scope_memory(const char *v2dir, const char *name, uint64_t *ret) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s/memory.current", v2dir, name) >= 0 && read_u64_file(path, ret) >= 0)
                return true;
        free(path);
        return asprintf(&path, "/sys/fs/cgroup/memory/" RUNS_SLICE_PATH "/%s/memory.usage_in_bytes", name) >=
                       0 &&
               read_u64_file(path, ret) >= 0;
}

/* The language of the scope's first process, by its command name against the configured interpreters
 * (a comm is cut to 15 bytes); its age from that process's start time. */
static void scope_process(const Top *t, const char *v2dir, TopScope *sc) {
        _cleanup_free_ char *path = NULL, *procs = NULL, *stat = NULL;
        uint64_t pid = 0, start_ticks;
        struct timespec ts;
        const char *p;

        sc->language = "?";
        if (asprintf(&path, "%s/%s/cgroup.procs", v2dir, sc->name) < 0 ||
            read_full_file(path, SMALL_FILE_MAX, &procs, NULL) < 0)
                return;
        procs[strcspn(procs, "\n")] = '\0';
        if (parse_uint64(procs, &pid) < 0 || pid == 0)
                return;
        free(path);
        if (asprintf(&path, "/proc/%" PRIu64 "/stat", pid) < 0 ||
            read_full_file(path, SMALL_FILE_MAX, &stat, NULL) < 0)
                return;
        p = strchr(stat, '(');
        const char *e = strrchr(stat, ')');
        if (!p || !e || e < p)
                return;
        size_t comm_len = (size_t) (e - p - 1);
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const char *interp = runtime_interpreter(runtime_get(l), t->cfg);
                const char *base = interp ? strrchr(interp, '/') : NULL;

                base = base ? base + 1 : interp;
                if (base && comm_len > 0 && strncmp(p + 1, base, comm_len) == 0 &&
                    (strlen(base) == comm_len || comm_len == 15)) {
                        sc->language = language_to_string(l);
                        break;
                }
        }
        /* field 22, the start time in clock ticks since boot, 20 fields after the state */
        if (sscanf(e + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %" SCNu64,
                   &start_ticks) == 1 &&
            clock_gettime(CLOCK_BOOTTIME, &ts) == 0) {
                long hz = sysconf(_SC_CLK_TCK);
                uint64_t now_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
                uint64_t start_usec = hz > 0 ? start_ticks * USEC_PER_SEC / (uint64_t) hz : 0;

                sc->age_usec = now_usec > start_usec ? now_usec - start_usec : 0;
        }
}

static int scope_compare(const void *a, const void *b, void *userdata) {
        const TopScope *x = a, *y = b;
        const TopSort *sort = userdata;
        uint64_t u = 0, v = 0;

        switch (*sort) {
        case TOP_SORT_CPU:
                u = x->cpu_usec, v = y->cpu_usec;
                break;
        case TOP_SORT_MEMORY:
                u = x->memory, v = y->memory;
                break;
        case TOP_SORT_AGE:
        case _TOP_SORT_MAX:
                u = x->age_usec, v = y->age_usec;
                break;
        }
        return u < v ? 1 : u > v ? -1 : strcmp(x->name, y->name); /* largest first */
}

/* The scopes of difysandbox-runs.slice: runs, and the prepared runs of the warm pool waiting for code. */
static int scopes_read(const Top *t, TopScope **ret, size_t *ret_n) {
        static const char *const bases[] = { "/sys/fs/cgroup/" RUNS_SLICE_PATH,
                                             "/sys/fs/cgroup/unified/" RUNS_SLICE_PATH };
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ TopScope *v = NULL;
        const char *v2dir = NULL;
        size_t n = 0;
        struct dirent *de;

        for (size_t i = 0; i < ELEMENTSOF(bases) && !d; i++) {
                d = opendir(bases[i]);
                v2dir = bases[i];
        }
        *ret = NULL;
        *ret_n = 0;
        if (!d)
                return 0; /* no run yet, or not under systemd */
        while ((de = readdir(d)) && n < TOP_SCOPES_MAX) {
                TopScope *sc;

                if (strncmp(de->d_name, SCOPE_PREFIX, strlen(SCOPE_PREFIX)) != 0 ||
                    strlen(de->d_name) >= sizeof(sc->name))
                        continue;
                sc = reallocarray(v, n + 1, sizeof(*v));
                if (!sc)
                        return -ENOMEM;
                v = sc;
                sc = &v[n++];
                *sc = (TopScope){ 0 };
                (void) snprintf(sc->name, sizeof(sc->name), "%s", de->d_name);
                sc->has_cpu = scope_cpu(v2dir, sc->name, &sc->cpu_usec);
                sc->has_memory = scope_memory(v2dir, sc->name, &sc->memory);
                scope_process(t, v2dir, sc);
        }
        qsort_r(v, n, sizeof(*v), scope_compare, (void *) &t->sort);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* ---- one refresh ---- */

static void format_ms(char *buf, size_t size, uint64_t usec, bool known) {
        if (!known)
                (void) snprintf(buf, size, "-");
        else
                (void) snprintf(buf, size, "%.1f", (double) usec / 1000.0);
}

static void format_bytes(char *buf, size_t size, uint64_t bytes, bool known) {
        static const char units[] = "BKMGT";
        double v = (double) bytes;
        size_t u = 0;

        if (!known) {
                (void) snprintf(buf, size, "-");
                return;
        }
        while (v >= 1024 && u < sizeof(units) - 2) {
                v /= 1024;
                u++;
        }
        (void) snprintf(buf, size, u == 0 ? "%.0f%c" : "%.1f%c", v, units[u]);
}

/* The languages' rows: rates and percentiles over the last interval (the difference of two snapshots). */
static void draw_languages(Top *t, const StatsSnapshot *now, double seconds) {
        StatsSnapshot d = { 0 };

        line(t, "%-9s %7s %8s %8s %6s %9s %9s", "LANGUAGE", "RUNS/S", "P50 MS", "P95 MS", "POOL", "ERRORS/S",
             "REFUSED/S");
        for (unsigned l = 0; l < STATS_LANGUAGES; l++) {
                uint64_t runs = 0, errors = 0, refused, hits, misses;
                char p50[16], p95[16], pool[16];

                for (unsigned b = 0; b < STATS_LATENCY_BUCKETS; b++)
                        d.latency[l].buckets[b] = now->latency[l].buckets[b] - t->prev.latency[l].buckets[b];
                for (StatsResult r = 0; r < _STATS_RESULT_MAX; r++) {
                        uint64_t n = now->runs[l][r] - t->prev.runs[l][r];

                        if (r != STATS_RESULT_REJECTED)
                                runs += n;
                        if (r != STATS_RESULT_REJECTED && r != STATS_RESULT_OK)
                                errors += n;
                }
                refused = now->runs[l][STATS_RESULT_REJECTED] - t->prev.runs[l][STATS_RESULT_REJECTED];
                hits = now->pool_hits[l] - t->prev.pool_hits[l];
                misses = now->pool_misses[l] - t->prev.pool_misses[l];
                format_ms(p50, sizeof(p50), stats_snapshot_percentile(&d, l, 0.50), runs > 0);
                format_ms(p95, sizeof(p95), stats_snapshot_percentile(&d, l, 0.95), runs > 0);
                if (hits + misses > 0)
                        (void) snprintf(pool, sizeof(pool), "%" PRIu64 "%%", hits * 100 / (hits + misses));
                else
                        (void) snprintf(pool, sizeof(pool), "-");
                line(t, "%-9s %7.1f %8s %8s %6s %9.1f %9.1f", language_to_string((Language) l),
                     (double) runs / seconds, p50, p95, pool, (double) errors / seconds,
                     (double) refused / seconds);
        }
}

static void draw_scopes(Top *t, unsigned rows_left) {
        _cleanup_free_ TopScope *scopes = NULL;
        size_t n = 0;

        if (scopes_read(t, &scopes, &n) < 0) {
                line(t, "cannot read the runs' cgroups");
                return;
        }
        line(t, "%-37s %-8s %7s %8s %9s", "SCOPE (runs and prepared runs)", "LANGUAGE", "AGE S", "CPU S",
             "MEMORY");
        for (size_t i = 0; i < n && (!t->tty || i + 1 < rows_left); i++) {
                char mem[16], cpu[16];

                format_bytes(mem, sizeof(mem), scopes[i].memory, scopes[i].has_memory);
                if (scopes[i].has_cpu)
                        (void) snprintf(cpu, sizeof(cpu), "%.2f", (double) scopes[i].cpu_usec / 1e6);
                else
                        (void) snprintf(cpu, sizeof(cpu), "-");
                line(t, "%-37s %-8s %7.1f %8s %9s", scopes[i].name, scopes[i].language,
                     (double) scopes[i].age_usec / 1e6, cpu, mem);
        }
        if (t->tty && n + 1 > rows_left && rows_left > 0)
                line(t, "(%zu more)", n + 1 - rows_left);
}

static int draw(Top *t) {
        StatsSnapshot snap = { 0 };
        uint64_t usec = now(CLOCK_MONOTONIC);
        double seconds;
        long queue;
        char clock[16] = "", queued[24] = "?";
        time_t wall = time(NULL);
        struct tm tm;
        int r;

        r = stats_snapshot(t->stats, &snap);
        if (r < 0)
                return r;
        if (!t->have_prev) {
                t->prev = snap;
                t->prev_usec = usec - TOP_INTERVAL_USEC;
        }
        seconds = (double) (usec - t->prev_usec) / 1e6;
        if (seconds <= 0)
                seconds = 1;
        queue = queue_length(t);
        if (queue >= 0)
                (void) snprintf(queued, sizeof(queued), "%ld", queue);
        if (localtime_r(&wall, &tm))
                (void) strftime(clock, sizeof(clock), "%H:%M:%S", &tm);

        terminal_size(t);
        if (t->tty)
                (void) fputs("\033[H", t->out);
        line(t, "difysandbox top  %s  in flight %u/%" PRIu32 " max_workers  queued %s  sort %s", clock,
             snap.active_runs, t->cfg->max_workers, queued, sort_names[t->sort]);
        draw_languages(t, &snap, seconds);
        line(t, "%s", "");
        draw_scopes(t, t->height > 8 ? t->height - 8 : 1);
        if (t->tty) {
                line(t, "%s", "");
                line(t, "q quit, s sort (cpu, memory, age)");
                (void) fputs("\033[J", t->out); /* what an earlier, longer frame left below */
        } else
                line(t, "%s", "");
        (void) fflush(t->out);
        t->prev = snap;
        t->prev_usec = usec;
        t->have_prev = true;
        return 0;
}

/* ---- the loop ---- */

typedef struct TermState {
        struct termios saved;
        bool changed;
} TermState;

static void term_restore(TermState *s) {
        if (!s->changed)
                return;
        (void) tcsetattr(STDIN_FILENO, TCSANOW, &s->saved);
        (void) fputs("\033[?25h", stdout); /* the cursor back */
        (void) fflush(stdout);
        s->changed = false;
}

/* Keys one at a time, no echo; the cursor hidden while we draw. */
static void term_raw(TermState *s) {
        struct termios raw;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &s->saved) < 0)
                return;
        raw = s->saved;
        raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) < 0)
                return;
        s->changed = true;
        (void) fputs("\033[?25l\033[H\033[2J", stdout);
}

/* 1 to quit, 0 to go on. */
static int on_keys(Top *t) {
        char keys[32];
        ssize_t n = read(STDIN_FILENO, keys, sizeof(keys));

        for (ssize_t i = 0; i < n; i++)
                switch (keys[i]) {
                case 'q':
                        return 1;
                case 's':
                        t->sort = (t->sort + 1) % _TOP_SORT_MAX;
                        break;
                default:
                        break;
                }
        return n == 0 && !isatty(STDIN_FILENO) ? -1 : 0; /* -1: stdin ended, stop reading it */
}

/* Waits for the next refresh: the interval's end, a key that changes the view, or SIGWINCH. 1 to quit
 * (q, SIGINT, SIGTERM), 0 to draw, or a negative errno. */
static int wait_tick(Top *t, int sfd, bool *read_keys) {
        uint64_t deadline = now(CLOCK_MONOTONIC) + TOP_INTERVAL_USEC;

        for (;;) {
                struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN },
                                         { .fd = *read_keys ? STDIN_FILENO : -1, .events = POLLIN } };
                uint64_t left, cur = now(CLOCK_MONOTONIC);
                struct signalfd_siginfo si;
                int r;

                if (cur >= deadline)
                        return 0;
                left = deadline - cur;
                if (poll(pfd, 2, (int) ((left + 999) / 1000)) < 0 && errno != EINTR)
                        return -errno;
                if (pfd[0].revents & POLLIN && read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                        if (si.ssi_signo != SIGWINCH)
                                return 1;
                        if (t->tty)
                                (void) fputs("\033[H\033[2J", stdout);
                        return 0; /* redraw at the new size now */
                }
                if (pfd[1].revents & (POLLIN | POLLHUP)) {
                        r = on_keys(t);
                        if (r > 0)
                                return 1;
                        if (r < 0)
                                *read_keys = false;
                        else
                                return 0; /* show the new order at once */
                }
        }
}

int top_run(const Config *cfg, unsigned iterations) {
        _cleanup_(stats_closep) Stats *stats = NULL;
        _cleanup_(term_restore) TermState term = { 0 };
        _cleanup_close_ int sfd = -EBADF;
        Top t = { .cfg = cfg, .out = stdout, .tty = isatty(STDOUT_FILENO) };
        bool read_keys;
        sigset_t mask;
        int r;

        r = stats_open_readonly(cfg->state_dir, &stats);
        if (r == -EBADMSG) {
                ctl_error("the run statistics in %s/stats are of another version of difysandbox",
                          cfg->state_dir);
                return r;
        }
        if (r < 0) {
                ctl_error("cannot open the run statistics in %s/stats (no run yet?): %s", cfg->state_dir,
                          strerror(-r));
                return r;
        }
        t.stats = stats;

        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGINT) < 0 || sigaddset(&mask, SIGTERM) < 0 ||
            sigaddset(&mask, SIGWINCH) < 0 || sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                sfd = -1;
        else
                sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK); /* -1: a new one */
        if (sfd < 0) {
                r = -errno;
                ctl_error("cannot watch signals: %s", strerror(-r));
                return r;
        }
        if (t.tty)
                term_raw(&term);
        read_keys = t.tty && isatty(STDIN_FILENO);

        /* The first frame's rates are over its first second: nothing is shown before there is one. */
        r = stats_snapshot(stats, &t.prev);
        if (r < 0) {
                term_restore(&term);
                ctl_error("cannot read the run statistics: %s", strerror(-r));
                return r;
        }
        t.prev_usec = now(CLOCK_MONOTONIC);
        t.have_prev = true;

        for (unsigned i = 0; iterations == 0 || i < iterations; i++) {
                r = wait_tick(&t, sfd, &read_keys);
                if (r > 0)
                        return 0;
                if (r < 0) {
                        term_restore(&term);
                        ctl_error("cannot wait for keys: %s", strerror(-r));
                        return r;
                }
                r = draw(&t);
                if (r < 0) {
                        term_restore(&term);
                        ctl_error("cannot read the run statistics: %s", strerror(-r));
                        return r;
                }
        }
        return 0;
}
