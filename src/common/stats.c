/* stats: see stats.h. */

#include "stats.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "parse.h"
#include "time-util.h"

#define STATS_FILE_NAME "stats"
#define STATS_NEW_NAME "stats.new" /* a fresh file before it is renamed into place; only under the lock */
#define STATS_LOCK_NAME "stats.lock"

#define LOCK_TIMEOUT_USEC USEC_PER_SEC
#define LOCK_POLL_USEC UINT64_C(1000)

#define SLOT_PID_MASK ((UINT64_C(1) << STATS_SLOT_PID_BITS) - 1)
#define SLOT_START_MASK (UINT64_MAX >> STATS_SLOT_PID_BITS)
#define SUB_MASK ((1U << STATS_LATENCY_SUB_BITS) - 1)
#define LATENCY_MIN (UINT64_C(1) << STATS_LATENCY_MIN_SHIFT)
#define LATENCY_MAX (UINT64_C(1) << STATS_LATENCY_MAX_SHIFT)

/* "/proc/" + the digits of an int + "/stat" */
#define PROC_STAT_PATH_MAX (sizeof("/proc//stat") + 3 * sizeof(int))
/* /proc/<pid>/stat is one line of 52 numbers and a 16-byte comm: far below this */
#define PROC_STAT_MAX 4096U

_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "stats needs lock-free 64-bit atomics");
_Static_assert(sizeof(StatsFile) % sizeof(uint64_t) == 0, "StatsFile holds 64-bit words only");
_Static_assert(STATS_SLOT_PID_BITS < 64, "a slot word holds a pid and a start time");

struct Stats {
        StatsFile *file; /* the shared mapping */
        bool writable;   /* mapped PROT_WRITE; otherwise recording does nothing */
        pid_t pid;       /* the process self_word names: refreshed after a fork */
        uint64_t self_word;
};

const char *stats_result_to_string(StatsResult result) {
        if (result == STATS_RESULT_REJECTED)
                return "rejected";
        return run_result_to_string((RunResult) result);
}

/* ---- latency histogram ---- */

unsigned stats_latency_bucket(uint64_t usec) {
        unsigned k;

        if (usec < LATENCY_MIN)
                return 0;
        if (usec >= LATENCY_MAX)
                return STATS_LATENCY_BUCKETS - 1;
        k = 63U - (unsigned) __builtin_clzll(usec); /* the octave: 2^k <= usec < 2^(k+1) */
        return 1U + ((k - STATS_LATENCY_MIN_SHIFT) << STATS_LATENCY_SUB_BITS) +
               (unsigned) ((usec >> (k - STATS_LATENCY_SUB_BITS)) & SUB_MASK);
}

void stats_latency_bucket_bounds(unsigned i, uint64_t *ret_lower, uint64_t *ret_upper) {
        unsigned j, k;
        uint64_t width, lower;

        if (i == 0) {
                *ret_lower = 0;
                *ret_upper = LATENCY_MIN;
                return;
        }
        if (i >= STATS_LATENCY_BUCKETS - 1) {
                *ret_lower = LATENCY_MAX;
                *ret_upper = UINT64_MAX;
                return;
        }
        j = i - 1;
        k = STATS_LATENCY_MIN_SHIFT + (j >> STATS_LATENCY_SUB_BITS);
        width = UINT64_C(1) << (k - STATS_LATENCY_SUB_BITS);
        lower = (UINT64_C(1) << k) + (j & SUB_MASK) * width;
        *ret_lower = lower;
        *ret_upper = lower + width;
}

/* What a percentile that falls into bucket i reports: its middle, see the bound in stats.h. */
static uint64_t bucket_estimate(unsigned i) {
        uint64_t lower, upper;

        if (i >= STATS_LATENCY_BUCKETS - 1)
                return LATENCY_MAX; /* open-ended: a lower bound */
        stats_latency_bucket_bounds(i, &lower, &upper);
        return lower + (upper - lower) / 2;
}

/* ---- /proc: who owns a slot ---- */

/* Reads the state (field 3) and start time (field 22) of /proc/<pid>/stat. */
static int proc_stat_read(pid_t pid, char *ret_state, uint64_t *ret_start) {
        _cleanup_free_ char *buf = NULL;
        char path[PROC_STAT_PATH_MAX], num[sizeof("18446744073709551615")];
        const char *p;
        size_t len;
        int r;

        if (snprintf(path, sizeof(path), "/proc/%i/stat", (int) pid) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        r = read_full_file(path, PROC_STAT_MAX, &buf, NULL);
        if (r < 0)
                return r;

        /* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so look for the last ')' */
        p = strrchr(buf, ')');
        if (!p || p[1] != ' ' || p[2] == '\0')
                return -EBADMSG;
        p += 2;
        *ret_state = *p;
        for (unsigned field = 3; field < 22; field++) {
                p = strchr(p, ' ');
                if (!p)
                        return -EBADMSG;
                p++;
        }
        len = strcspn(p, " \n");
        if (len == 0 || len >= sizeof(num))
                return -EBADMSG;
        memcpy(num, p, len);
        num[len] = '\0';
        return parse_uint64(num, ret_start);
}

static uint64_t slot_word(pid_t pid, uint64_t start) {
        return ((start & SLOT_START_MASK) << STATS_SLOT_PID_BITS) | ((uint64_t) pid & SLOT_PID_MASK);
}

/* The slot word of the calling process. Without a readable /proc the start time is 0 ("unknown"), and
 * owner_alive() then goes by the pid alone. */
static void identify_self(Stats *s) {
        uint64_t start = 0;
        char state;

        s->pid = getpid();
        if (proc_stat_read(s->pid, &state, &start) < 0)
                start = 0;
        s->self_word = slot_word(s->pid, start);
}

/* Whether the process a slot word names still runs. When that cannot be told (its /proc entry is
 * hidden, hidepid=), it counts as alive: a slot is never taken from a live run. */
static bool owner_alive(uint64_t word) {
        pid_t pid = (pid_t) (word & SLOT_PID_MASK);
        uint64_t start = word >> STATS_SLOT_PID_BITS, actual;
        char state;

        if (pid <= 0)
                return false;
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return false;
        if (proc_stat_read(pid, &state, &actual) < 0)
                /* it may have died just now; otherwise its entry is hidden from us */
                return !(kill(pid, 0) < 0 && errno == ESRCH);
        if (state == 'Z' || state == 'X')
                return false; /* killed, not yet reaped: it runs nothing */
        if (start != 0 && (actual & SLOT_START_MASK) != start)
                return false; /* the pid was reused */
        return true;
}

/* ---- the file ---- */

static int write_all(int fd, const void *buf, size_t n) {
        const char *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Maps <dir>/stats if it is a complete file of this layout. -ENOENT when there is none, -EBADMSG when
 * there is one that must be replaced. */
static int map_existing_full(int dir_fd, bool readonly, StatsFile **ret_file, bool *ret_writable) {
        _cleanup_close_ int fd = -EBADF;
        bool writable = !readonly;
        StatsFile *f;
        struct stat st;

        fd = openat(dir_fd, STATS_FILE_NAME,
                    (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0 && !readonly && (errno == EACCES || errno == EPERM || errno == EROFS)) {
                writable = false;
                fd = openat(dir_fd, STATS_FILE_NAME, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        }
        if (fd < 0)
                return errno == ELOOP ? -EBADMSG : -errno; /* a symlink is not ours: replace it */
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size != (off_t) sizeof(StatsFile))
                return -EBADMSG;

        f = mmap(NULL, sizeof(StatsFile), PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
        if (f == MAP_FAILED)
                return -errno;
        if (f->magic != STATS_FILE_MAGIC || f->version != STATS_FILE_VERSION ||
            f->size != sizeof(StatsFile)) {
                (void) munmap(f, sizeof(StatsFile));
                return -EBADMSG;
        }
        *ret_file = f;
        *ret_writable = writable;
        return 0;
}

static int map_existing(int dir_fd, StatsFile **ret_file, bool *ret_writable) {
        return map_existing_full(dir_fd, /* readonly= */ false, ret_file, ret_writable);
}

/* Writes a fresh, complete file to <dir>/stats.new and renames it over <dir>/stats. Only under the
 * lock, so stats.new is ours and nobody else replaces the file meanwhile. */
static int write_fresh(int dir_fd) {
        _cleanup_free_ StatsFile *f = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        *f = (StatsFile){
                .magic = STATS_FILE_MAGIC,
                .version = STATS_FILE_VERSION,
                .size = sizeof(StatsFile),
                .created_realtime_usec = now(CLOCK_REALTIME),
        };

        if (unlinkat(dir_fd, STATS_NEW_NAME, 0) < 0 && errno != ENOENT)
                return -errno; /* left by a creator killed before its rename */
        fd = openat(dir_fd, STATS_NEW_NAME, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, 0644) < 0) /* whatever the umask: the manager and difysandboxctl read it */
                return -errno;
        r = write_all(fd, f, sizeof(*f));
        if (r < 0)
                return r;
        if (renameat(dir_fd, STATS_NEW_NAME, dir_fd, STATS_FILE_NAME) < 0)
                return -errno;
        return 0;
}

/* Takes the creation lock, waiting at most LOCK_TIMEOUT_USEC: its holder only writes a small file. */
static int lock_open(int dir_fd, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(dir_fd, STATS_LOCK_NAME, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        for (uint64_t waited = 0;; waited += LOCK_POLL_USEC) {
                if (flock(fd, LOCK_EX | LOCK_NB) >= 0)
                        break;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                if (waited >= LOCK_TIMEOUT_USEC)
                        return -ETIMEDOUT;
                (void) nanosleep(&(struct timespec){ .tv_nsec = (long) (LOCK_POLL_USEC * NSEC_PER_USEC) },
                                 NULL); /* an interruption only shortens one poll */
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int create_locked(const char *state_dir, int dir_fd, StatsFile **ret_file, bool *ret_writable) {
        _cleanup_close_ int lock_fd = -EBADF;
        int r;

        r = lock_open(dir_fd, &lock_fd);
        if (r < 0)
                return r;

        /* Whoever held the lock before us may have done the work. */
        r = map_existing(dir_fd, ret_file, ret_writable);
        if (r != -ENOENT && r != -EBADMSG)
                return r;
        if (r == -EBADMSG)
                log_warning("Stats file '%s/" STATS_FILE_NAME "' is damaged or of another layout, "
                            "replacing it with an empty one",
                            state_dir);

        r = write_fresh(dir_fd);
        if (r < 0)
                return r;
        return map_existing(dir_fd, ret_file, ret_writable);
}

int stats_open(const char *state_dir, Stats **ret) {
        _cleanup_(stats_closep) Stats *s = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        if (!state_dir || !ret)
                return -EINVAL;
        /* mkdir() only where it is missing: a worker may read the stats but not mkdir (its filter). */
        dir_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 && errno == ENOENT) {
                if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                        return -errno;
                dir_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        if (dir_fd < 0)
                return -errno;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;

        r = map_existing(dir_fd, &s->file, &s->writable);
        if (r == -ENOENT || r == -EBADMSG)
                r = create_locked(state_dir, dir_fd, &s->file, &s->writable);
        if (r < 0)
                return r;

        identify_self(s);
        *ret = TAKE_PTR(s);
        return 0;
}

int stats_open_readonly(const char *state_dir, Stats **ret) {
        _cleanup_(stats_closep) Stats *s = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        if (!state_dir || !ret)
                return -EINVAL;
        dir_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -errno;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        r = map_existing_full(dir_fd, /* readonly= */ true, &s->file, &s->writable);
        if (r < 0)
                return r;
        identify_self(s);
        *ret = TAKE_PTR(s);
        return 0;
}

Stats *stats_close(Stats *s) {
        if (s) {
                if (s->file)
                        (void) munmap(s->file, sizeof(StatsFile));
                free(s);
        }
        return NULL;
}

/* ---- recording: atomic adds only ---- */

static void add(uint64_t *counter, uint64_t n) {
        (void) __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

void stats_record_rejected(Stats *s, unsigned language) {
        if (!s || !s->writable)
                return;
        if (language < STATS_LANGUAGES)
                add(&s->file->runs[language][STATS_RESULT_REJECTED], 1);
        else
                add(&s->file->rejected_unknown_language, 1);
}

void stats_record_run(Stats *s, unsigned language, StatsResult result, uint64_t duration_usec) {
        StatsLatency *l;

        if (!s || !s->writable || language >= STATS_LANGUAGES || result < 0 || result >= _STATS_RESULT_MAX)
                return;
        if (result == STATS_RESULT_REJECTED) {
                stats_record_rejected(s, language);
                return;
        }
        add(&s->file->runs[language][result], 1);
        l = &s->file->latency[language];
        add(&l->buckets[stats_latency_bucket(duration_usec)], 1);
        add(&l->sum_usec, duration_usec);
        add(&l->count, 1);
}

void stats_add_egress_denials(Stats *s, uint64_t n) {
        if (!s || !s->writable || n == 0)
                return;
        add(&s->file->egress_denials, n);
}

static void latency_add(StatsLatency *l, uint64_t usec) {
        add(&l->buckets[stats_latency_bucket(usec)], 1);
        add(&l->sum_usec, usec);
        add(&l->count, 1);
}

void stats_record_admission_wait(Stats *s, unsigned language, uint64_t waited_usec) {
        if (!s || !s->writable || language >= STATS_LANGUAGES)
                return;
        latency_add(&s->file->admission.wait[language], waited_usec);
}

void stats_record_refused_max_requests(Stats *s, unsigned language) {
        unsigned row = language < STATS_LANGUAGES ? language : STATS_LANGUAGES; /* the last: unknown */

        if (!s || !s->writable)
                return;
        add(&s->file->admission.refused_max_requests[row], 1);
}

void stats_record_pool(Stats *s, unsigned language, bool warm) {
        if (!s || !s->writable || language >= STATS_LANGUAGES)
                return;
        add(warm ? &s->file->pool_hits[language] : &s->file->pool_misses[language], 1);
}

void stats_record_refusal(Stats *s, unsigned language, unsigned nr, uint64_t count) {
        if (!s || !s->writable || language >= STATS_LANGUAGES || nr >= STATS_SYSCALLS || count == 0)
                return;
        add(&s->file->refused_calls[language][nr], count);
}

uint64_t stats_config_generation(const Stats *s) {
        if (!s)
                return 0;
        return __atomic_load_n(&s->file->config_generation, __ATOMIC_ACQUIRE);
}

void stats_bump_config_generation(Stats *s) {
        if (!s || !s->writable)
                return;
        (void) __atomic_fetch_add(&s->file->config_generation, 1, __ATOMIC_ACQ_REL);
}

/* ---- active runs ---- */

static bool slot_cas(uint64_t *slot, uint64_t expected, uint64_t desired) {
        return __atomic_compare_exchange_n(slot, &expected, desired, /* weak= */ false, __ATOMIC_ACQ_REL,
                                           __ATOMIC_RELAXED);
}

int stats_run_begin(Stats *s) {
        unsigned start;
        uint64_t *slots;

        if (!s)
                return -EBADF;
        if (!s->writable)
                return -EROFS;
        if (getpid() != s->pid)
                identify_self(s); /* forked since the last run */

        /* Fast path: the first empty slot from a place of our own, so workers rarely meet. */
        slots = s->file->slots;
        start = (unsigned) (((uint64_t) s->pid * UINT64_C(0x9E3779B97F4A7C15)) >> 32) % STATS_SLOTS;
        for (unsigned i = 0; i < STATS_SLOTS; i++) {
                unsigned idx = (start + i) % STATS_SLOTS;

                if (__atomic_load_n(&slots[idx], __ATOMIC_RELAXED) == 0 &&
                    slot_cas(&slots[idx], 0, s->self_word))
                        return (int) idx;
        }

        /* Slow path: the table is full; take over a slot whose owner is gone. */
        for (unsigned i = 0; i < STATS_SLOTS; i++) {
                unsigned idx = (start + i) % STATS_SLOTS;
                uint64_t w = __atomic_load_n(&slots[idx], __ATOMIC_RELAXED);

                if ((w == 0 || !owner_alive(w)) && slot_cas(&slots[idx], w, s->self_word))
                        return (int) idx;
        }
        return -ENOSPC;
}

void stats_run_end(Stats *s, int slot) {
        if (!s || !s->writable || slot < 0 || (unsigned) slot >= STATS_SLOTS)
                return;
        /* Only if it is still ours: a slot is never taken from a live owner, but be sure. */
        (void) slot_cas(&s->file->slots[slot], s->self_word, 0);
}

unsigned stats_count_active(const Stats *s) {
        unsigned n = 0;

        if (!s)
                return 0;
        for (unsigned i = 0; i < STATS_SLOTS; i++) {
                uint64_t w = __atomic_load_n(&s->file->slots[i], __ATOMIC_ACQUIRE);

                if (w == 0)
                        continue;
                if (owner_alive(w))
                        n++;
                else if (s->writable)
                        (void) slot_cas(&s->file->slots[i], w, 0); /* lost to a new owner: fine */
        }
        return n;
}

/* ---- snapshots ---- */

static uint64_t load(const uint64_t *counter) {
        return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static void latency_load(const StatsLatency *l, StatsLatency *ret) {
        ret->count = load(&l->count);
        ret->sum_usec = load(&l->sum_usec);
        for (unsigned b = 0; b < STATS_LATENCY_BUCKETS; b++)
                ret->buckets[b] = load(&l->buckets[b]);
}

int stats_snapshot(const Stats *s, StatsSnapshot *ret) {
        const StatsFile *f;
        StatsSnapshot snap = {};

        if (!s)
                return -EBADF;
        f = s->file;
        snap.created_realtime_usec = f->created_realtime_usec;
        snap.config_generation = stats_config_generation(s);
        for (unsigned l = 0; l < STATS_LANGUAGES; l++) {
                for (unsigned r = 0; r < _STATS_RESULT_MAX; r++)
                        snap.runs[l][r] = load(&f->runs[l][r]);
                snap.pool_hits[l] = load(&f->pool_hits[l]);
                snap.pool_misses[l] = load(&f->pool_misses[l]);
                snap.latency[l].count = load(&f->latency[l].count);
                snap.latency[l].sum_usec = load(&f->latency[l].sum_usec);
                for (unsigned b = 0; b < STATS_LATENCY_BUCKETS; b++)
                        snap.latency[l].buckets[b] = load(&f->latency[l].buckets[b]);
                for (unsigned n = 0; n < STATS_SYSCALLS; n++)
                        snap.refused_calls[l][n] = load(&f->refused_calls[l][n]);
                latency_load(&f->admission.wait[l], &snap.admission.wait[l]);
        }
        for (unsigned l = 0; l <= STATS_LANGUAGES; l++)
                snap.admission.refused_max_requests[l] = load(&f->admission.refused_max_requests[l]);
        snap.rejected_unknown_language = load(&f->rejected_unknown_language);
        snap.egress_denials = load(&f->egress_denials);
        snap.active_runs = stats_count_active(s);
        *ret = snap;
        return 0;
}

uint64_t stats_snapshot_total(const StatsSnapshot *snap, StatsResult result) {
        uint64_t n = 0;

        if (!snap || result < 0 || result >= _STATS_RESULT_MAX)
                return 0;
        for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                n += snap->runs[l][result];
        if (result == STATS_RESULT_REJECTED)
                n += snap->rejected_unknown_language;
        return n;
}

uint64_t stats_snapshot_percentile(const StatsSnapshot *snap, unsigned language, double q) {
        const uint64_t *buckets;
        uint64_t total = 0, rank, cumulative = 0;
        double want;

        if (!snap || language >= STATS_LANGUAGES)
                return 0;
        /* The buckets, not count: they are what the rank is looked up in, and a snapshot is not taken
         * at one instant. */
        buckets = snap->latency[language].buckets;
        for (unsigned i = 0; i < STATS_LATENCY_BUCKETS; i++)
                total += buckets[i];
        if (total == 0)
                return 0;

        if (!(q > 0)) /* NaN too */
                q = 0;
        if (q > 1)
                q = 1;
        /* Nearest rank: the smallest value with at least q of the values at or below it. */
        want = q * (double) total;
        rank = (uint64_t) want;
        if ((double) rank < want)
                rank++;
        if (rank < 1)
                rank = 1;
        if (rank > total)
                rank = total;

        for (unsigned i = 0; i < STATS_LATENCY_BUCKETS; i++) {
                cumulative += buckets[i];
                if (cumulative >= rank)
                        return bucket_estimate(i);
        }
        return bucket_estimate(STATS_LATENCY_BUCKETS - 1); /* not reached: cumulative ends at total */
}
