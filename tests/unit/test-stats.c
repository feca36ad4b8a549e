/* test-stats: src/common/stats.c. Exact counts, also from many processes at once; pool hits and misses;
 * active-run slots of SIGKILLed and reused-pid owners freed and taken over; percentiles within the
 * documented bound; a damaged or old file replaced (version 1, before the pool counts, too); counts kept
 * across a reopen. Each test has its own mkdtemp() state directory. Children never call cmocka: they
 * report through their exit status. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/stats.h"
#include "common/time-util.h"

#define PY 0U
#define NODE 1U
#define NPROC 8
#define NRUNS 3000 /* a multiple of 2, 3 and 5: the loop below counts evenly */

typedef struct Fixture {
        char dir[64];
        char path[128]; /* <dir>/stats */
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-stats.XXXXXX");
        if (!mkdtemp(f->dir)) {
                free(f);
                return -1;
        }
        snprintf(f->path, sizeof(f->path), "%s/stats", f->dir);
        *state = f;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void) nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* The file as any process sees it: for checking the layout and forging slot words. */
static StatsFile *map_file(const char *path) {
        StatsFile *m;
        int fd;

        fd = open(path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        m = mmap(NULL, sizeof(StatsFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        assert_true(m != MAP_FAILED);
        return m;
}

static void unmap_file(StatsFile *m) {
        assert_int_equal(munmap(m, sizeof(StatsFile)), 0);
}

static ino_t inode_of(const char *path) {
        struct stat st;

        assert_int_equal(stat(path, &st), 0);
        return st.st_ino;
}

/* The file at path is a fresh, complete file of this layout, mode 0644. */
static void assert_good_file(const char *path) {
        StatsFile *m;
        struct stat st;

        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(st.st_size, sizeof(StatsFile));
        m = map_file(path);
        assert_true(m->magic == STATS_FILE_MAGIC);
        assert_int_equal(m->version, STATS_FILE_VERSION);
        assert_int_equal(m->size, sizeof(StatsFile));
        unmap_file(m);
}

static void write_file(const char *path, const void *data, size_t n) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, n), (ssize_t) n);
        close(fd);
}

static uint64_t bucket_sum(const StatsLatency *l) {
        uint64_t n = 0;

        for (unsigned i = 0; i < STATS_LATENCY_BUCKETS; i++)
                n += l->buckets[i];
        return n;
}

/* ---- names, counts ---- */

static void test_result_names(void **state) {
        static const char *const names[] = { "ok",      "error",   "timeout",
                                             "memory",  "seccomp", "output-truncated",
                                             "rejected" };

        assert_int_equal(ELEMENTSOF(names), _STATS_RESULT_MAX);
        for (StatsResult r = 0; r < _STATS_RESULT_MAX; r++)
                assert_string_equal(stats_result_to_string(r), names[r]);
        assert_null(stats_result_to_string(_STATS_RESULT_MAX));
        assert_null(stats_result_to_string(_STATS_RESULT_INVALID));
}

/* Every run's result is counted, as itself: the mapping is total and keeps the name, and only
 * "rejected" (no run has it) lies beyond the run results. */
static void test_result_from_run(void **state) {
        assert_int_equal(STATS_RESULT_REJECTED, _RUN_RESULT_MAX);
        assert_int_equal(_STATS_RESULT_MAX, _RUN_RESULT_MAX + 1);
        for (RunResult r = 0; r < _RUN_RESULT_MAX; r++) {
                StatsResult s = stats_result_from_run(r);

                assert_true(s >= 0 && s < _STATS_RESULT_MAX);
                assert_int_not_equal(s, STATS_RESULT_REJECTED);
                assert_string_equal(stats_result_to_string(s), run_result_to_string(r));
        }
        assert_int_equal(stats_result_from_run(_RUN_RESULT_MAX), _STATS_RESULT_INVALID);
        assert_int_equal(stats_result_from_run(_RUN_RESULT_INVALID), _STATS_RESULT_INVALID);
}

static void test_counts_by_result(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        StatsSnapshot snap;

        assert_int_equal(stats_open(f->dir, &s), 0);
        assert_non_null(s);
        assert_good_file(f->path);

        for (int i = 0; i < 5; i++)
                stats_record_run(s, PY, STATS_RESULT_OK, 1000);
        for (int i = 0; i < 3; i++)
                stats_record_run(s, PY, STATS_RESULT_TIMEOUT, 5000000);
        stats_record_run(s, PY, STATS_RESULT_SECCOMP, 2000);
        stats_record_run(s, NODE, STATS_RESULT_ERROR, 30000);
        stats_record_run(s, NODE, STATS_RESULT_MEMORY, 40000);
        stats_record_run(s, NODE, STATS_RESULT_OUTPUT_TRUNCATED, 50000);
        stats_record_run(s, NODE, STATS_RESULT_OK, 60000);
        stats_record_run(s, NODE, STATS_RESULT_OK, 70000);
        /* rejected: per language when known, else apart; never in the latency */
        stats_record_rejected(s, NODE);
        stats_record_rejected(s, STATS_LANGUAGE_UNKNOWN);
        stats_record_rejected(s, 7);
        stats_record_run(s, PY, STATS_RESULT_REJECTED, 123456);
        stats_add_egress_denials(s, 3);
        stats_add_egress_denials(s, 0);
        stats_add_egress_denials(s, 4);
        /* nonsense is not counted anywhere */
        stats_record_run(s, STATS_LANGUAGES, STATS_RESULT_OK, 1000);
        stats_record_run(s, STATS_LANGUAGE_UNKNOWN, STATS_RESULT_OK, 1000);
        stats_record_run(s, PY, _STATS_RESULT_MAX, 1000);
        stats_record_run(s, PY, _STATS_RESULT_INVALID, 1000);

        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_OK], 5);
        assert_int_equal(snap.runs[PY][STATS_RESULT_ERROR], 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_TIMEOUT], 3);
        assert_int_equal(snap.runs[PY][STATS_RESULT_MEMORY], 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_SECCOMP], 1);
        assert_int_equal(snap.runs[PY][STATS_RESULT_OUTPUT_TRUNCATED], 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_REJECTED], 1);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_OK], 2);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_ERROR], 1);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_TIMEOUT], 0);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_MEMORY], 1);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_SECCOMP], 0);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_OUTPUT_TRUNCATED], 1);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_REJECTED], 1);
        assert_int_equal(snap.rejected_unknown_language, 2);
        assert_int_equal(snap.egress_denials, 7);
        assert_int_equal(snap.active_runs, 0);

        assert_int_equal(stats_snapshot_total(&snap, STATS_RESULT_OK), 7);
        assert_int_equal(stats_snapshot_total(&snap, STATS_RESULT_REJECTED), 4);
        assert_int_equal(stats_snapshot_total(&snap, STATS_RESULT_TIMEOUT), 3);
        assert_int_equal(stats_snapshot_total(&snap, _STATS_RESULT_MAX), 0);

        /* latency: finished runs only */
        assert_int_equal(snap.latency[PY].count, 9);
        assert_int_equal(snap.latency[PY].sum_usec, 5 * 1000 + 3 * 5000000 + 2000);
        assert_int_equal(bucket_sum(&snap.latency[PY]), 9);
        assert_int_equal(snap.latency[PY].buckets[stats_latency_bucket(1000)], 5);
        assert_int_equal(snap.latency[PY].buckets[stats_latency_bucket(5000000)], 3);
        assert_int_equal(snap.latency[PY].buckets[stats_latency_bucket(2000)], 1);
        assert_int_equal(snap.latency[NODE].count, 5);
        assert_int_equal(snap.latency[NODE].sum_usec, 250000);
        assert_int_equal(bucket_sum(&snap.latency[NODE]), 5);
}

/* Pool hits and misses: per language, apart from the runs by result, kept across a reopen. */
static void test_pool_hits_and_misses(void **state) {
        Fixture *f = *state;
        Stats *s = NULL;
        StatsSnapshot snap;

        assert_int_equal(stats_open(f->dir, &s), 0);
        for (int i = 0; i < 19; i++)
                stats_record_pool(s, PY, /* warm= */ true);
        stats_record_pool(s, PY, /* warm= */ false);
        for (int i = 0; i < 3; i++)
                stats_record_pool(s, NODE, /* warm= */ false);
        stats_record_pool(s, NODE, /* warm= */ true);
        /* an unknown language is not counted anywhere */
        stats_record_pool(s, STATS_LANGUAGES, true);
        stats_record_pool(s, STATS_LANGUAGE_UNKNOWN, false);

        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_int_equal(snap.pool_hits[PY], 19);
        assert_int_equal(snap.pool_misses[PY], 1);
        assert_int_equal(snap.pool_hits[NODE], 1);
        assert_int_equal(snap.pool_misses[NODE], 3);
        /* counted apart from the runs: a hit is not a run, and a run is not a hit */
        assert_int_equal(stats_snapshot_total(&snap, STATS_RESULT_OK), 0);
        assert_int_equal(snap.latency[PY].count, 0);
        stats_record_run(s, PY, STATS_RESULT_OK, 1000);
        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_int_equal(snap.pool_hits[PY] + snap.pool_misses[PY], 20);
        s = stats_close(s);

        /* in the file: another process (the manager) reads them */
        assert_int_equal(stats_open(f->dir, &s), 0);
        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_int_equal(snap.pool_hits[PY], 19);
        assert_int_equal(snap.pool_misses[NODE], 3);
        s = stats_close(s);
}

static void test_null_is_harmless(void **state) {
        StatsSnapshot snap = { .egress_denials = 42 };

        stats_record_run(NULL, PY, STATS_RESULT_OK, 1);
        stats_record_rejected(NULL, PY);
        stats_add_egress_denials(NULL, 1);
        stats_record_pool(NULL, PY, true);
        stats_bump_config_generation(NULL);
        stats_run_end(NULL, 0);
        assert_int_equal(stats_run_begin(NULL), -EBADF);
        assert_int_equal(stats_config_generation(NULL), 0);
        assert_int_equal(stats_count_active(NULL), 0);
        assert_int_equal(stats_snapshot(NULL, &snap), -EBADF);
        assert_int_equal(snap.egress_denials, 42); /* untouched on failure */
        assert_null(stats_close(NULL));
}

/* ---- many processes ---- */

/* Forks n children that wait on a pipe, then run child(s, i) and exit with its result. */
typedef int (*ChildFn)(const char *dir, Stats *inherited, int i);

static void run_children(const char *dir, Stats *inherited, int n, ChildFn fn) {
        pid_t pids[64];
        int go[2];

        assert_true(n <= (int) ELEMENTSOF(pids));
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        for (int i = 0; i < n; i++) {
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0) {
                        char c;

                        close(go[1]);
                        if (read(go[0], &c, 1) != 0) /* EOF: all start at once */
                                _exit(100);
                        _exit(fn(dir, inherited, i));
                }
        }
        close(go[0]);
        close(go[1]);
        for (int i = 0; i < n; i++) {
                int status;

                assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 0);
        }
}

static uint64_t child_duration(int i, int j) {
        return (uint64_t) (i + 1) * 1000 + (uint64_t) j; /* known sum */
}

static int child_record(const char *dir, Stats *inherited, int i) {
        Stats *own = NULL, *s = inherited;

        /* half of them use the parent's mapping, half map the file themselves */
        if (i % 2 == 1) {
                if (stats_open(dir, &own) < 0)
                        return 1;
                s = own;
        }
        for (int j = 0; j < NRUNS; j++) {
                int slot = stats_run_begin(s);

                if (slot < 0)
                        return 2;
                stats_record_run(s, (unsigned) (j % 2), (StatsResult) (j % 3), child_duration(i, j));
                stats_record_rejected(s, j % 5 == 0 ? STATS_LANGUAGE_UNKNOWN : PY);
                stats_add_egress_denials(s, 2);
                stats_run_end(s, slot);
        }
        stats_bump_config_generation(s);
        own = stats_close(own);
        return 0;
}

static void test_concurrent_processes_count_exactly(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        StatsSnapshot snap;
        uint64_t want_sum = 0, runs = 0, rejected = 0;

        assert_int_equal(stats_open(f->dir, &s), 0);
        run_children(f->dir, s, NPROC, child_record);

        assert_int_equal(stats_snapshot(s, &snap), 0);
        for (int i = 0; i < NPROC; i++)
                for (int j = 0; j < NRUNS; j++)
                        want_sum += child_duration(i, j);
        for (unsigned l = 0; l < STATS_LANGUAGES; l++) {
                for (StatsResult r = 0; r < STATS_RESULT_OUTPUT_TRUNCATED; r++)
                        runs += snap.runs[l][r];
                rejected += snap.runs[l][STATS_RESULT_REJECTED];
        }
        /* j % 2 picks the language, j % 3 the result: NRUNS/6 of each pair per child */
        for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                for (StatsResult r = 0; r < 3; r++)
                        assert_int_equal(snap.runs[l][r], NPROC * NRUNS / 6);
        assert_int_equal(runs, NPROC * NRUNS);
        assert_int_equal(snap.runs[NODE][STATS_RESULT_REJECTED], 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_REJECTED], NPROC * NRUNS * 4 / 5);
        assert_int_equal(snap.rejected_unknown_language, NPROC * NRUNS / 5);
        assert_int_equal(rejected + snap.rejected_unknown_language, NPROC * NRUNS);
        assert_int_equal(snap.egress_denials, 2 * NPROC * NRUNS);
        assert_int_equal(snap.latency[PY].count + snap.latency[NODE].count, NPROC * NRUNS);
        assert_int_equal(bucket_sum(&snap.latency[PY]) + bucket_sum(&snap.latency[NODE]), NPROC * NRUNS);
        assert_int_equal(snap.latency[PY].sum_usec + snap.latency[NODE].sum_usec, want_sum);
        assert_int_equal(snap.config_generation, NPROC);
        assert_int_equal(snap.active_runs, 0); /* every run ended */
}

static int child_open_record_one(const char *dir, Stats *inherited, int i) {
        Stats *s = NULL;

        if (stats_open(dir, &s) < 0)
                return 1;
        stats_record_run(s, NODE, STATS_RESULT_OK, 1000);
        s = stats_close(s);
        return 0;
}

/* Processes that open a missing or damaged file at the same instant all end up on one and the same
 * file: no count lands in a file that another process replaced. */
static void test_concurrent_creation(void **state) {
        Fixture *f = *state;

        for (int round = 0; round < 20; round++) {
                _cleanup_(stats_closep) Stats *s = NULL;
                char dir[128], path[160];
                StatsSnapshot snap;

                snprintf(dir, sizeof(dir), "%s/%d", f->dir, round);
                snprintf(path, sizeof(path), "%s/stats", dir);
                if (round % 2 == 1) { /* damaged: every child sees a file to replace */
                        assert_int_equal(mkdir(dir, 0755), 0);
                        write_file(path, "garbage", 7);
                }
                run_children(dir, NULL, 16, child_open_record_one);
                assert_good_file(path);
                assert_int_equal(stats_open(dir, &s), 0);
                assert_int_equal(stats_snapshot(s, &snap), 0);
                assert_int_equal(snap.runs[NODE][STATS_RESULT_OK], 16);
        }
}

/* ---- active runs ---- */

static void test_run_begin_end(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL, *other = NULL;
        int a, b;

        assert_int_equal(stats_open(f->dir, &s), 0);
        assert_int_equal(stats_open(f->dir, &other), 0);
        assert_int_equal(stats_count_active(s), 0);
        a = stats_run_begin(s);
        assert_in_range(a, 0, STATS_SLOTS - 1);
        assert_int_equal(stats_count_active(other), 1); /* seen through another mapping */
        b = stats_run_begin(other);
        assert_in_range(b, 0, STATS_SLOTS - 1);
        assert_int_not_equal(a, b);
        assert_int_equal(stats_count_active(s), 2);
        stats_run_end(s, a);
        assert_int_equal(stats_count_active(s), 1);
        stats_run_end(s, a); /* twice: nothing */
        stats_run_end(s, -ENOSPC);
        stats_run_end(s, STATS_SLOTS);
        assert_int_equal(stats_count_active(s), 1);
        stats_run_end(other, b);
        assert_int_equal(stats_count_active(s), 0);
}

/* A child takes every slot and is SIGKILLed: while it lives the table is full; once it is dead (a
 * zombie, not even reaped) none of its slots counts, and they are taken over. */
static void test_killed_owner_slots_reclaimed(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        int ready[2], slots[3];
        unsigned taken = 0;
        siginfo_t si = {};
        pid_t pid;

        assert_int_equal(stats_open(f->dir, &s), 0);
        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                unsigned n = 0;

                close(ready[0]);
                while (stats_run_begin(s) >= 0) /* the mapping inherited across fork() */
                        n++;
                if (write(ready[1], &n, sizeof(n)) != sizeof(n))
                        _exit(1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        assert_int_equal(read(ready[0], &taken, sizeof(taken)), sizeof(taken));
        close(ready[0]);
        assert_int_equal(taken, STATS_SLOTS);
        assert_int_equal(stats_count_active(s), STATS_SLOTS);
        assert_int_equal(stats_run_begin(s), -ENOSPC); /* full of live runs: uncounted, not blocked */

        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitid(P_PID, (id_t) pid, &si, WEXITED | WNOWAIT), 0); /* a zombie now */

        /* begin first: it must take over a dead slot itself (the table has no empty one) */
        slots[0] = stats_run_begin(s);
        assert_in_range(slots[0], 0, STATS_SLOTS - 1);
        assert_int_equal(stats_count_active(s), 1); /* and this cleared the other dead slots */
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        slots[1] = stats_run_begin(s);
        slots[2] = stats_run_begin(s);
        assert_in_range(slots[1], 0, STATS_SLOTS - 1);
        assert_in_range(slots[2], 0, STATS_SLOTS - 1);
        assert_int_equal(stats_count_active(s), 3);
        for (int i = 0; i < 3; i++)
                stats_run_end(s, slots[i]);
        assert_int_equal(stats_count_active(s), 0);
}

/* Slot words forged into the file: a live pid with another start time is a reused pid, a dead pid is
 * dead, a start time of 0 (unknown) goes by the pid alone. */
static void test_slot_owner_identity(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        uint64_t mine, other_start, dead;
        StatsFile *m;
        pid_t pid;
        int slot;

        assert_int_equal(stats_open(f->dir, &s), 0);
        m = map_file(f->path);

        slot = stats_run_begin(s);
        assert_in_range(slot, 0, STATS_SLOTS - 1);
        mine = m->slots[slot];
        assert_int_equal(mine & ((1ULL << STATS_SLOT_PID_BITS) - 1), (uint64_t) getpid());
        assert_true(mine >> STATS_SLOT_PID_BITS != 0); /* the start time was read */
        stats_run_end(s, slot);
        assert_int_equal(m->slots[slot], 0);

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(0);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
        dead = (uint64_t) pid | (mine & ~((1ULL << STATS_SLOT_PID_BITS) - 1));
        other_start = mine ^ (1ULL << STATS_SLOT_PID_BITS);

        m->slots[10] = other_start;
        m->slots[11] = dead;
        m->slots[12] = mine;
        m->slots[13] = (uint64_t) getpid(); /* start unknown */
        assert_int_equal(stats_count_active(s), 2);
        assert_int_equal(m->slots[10], 0); /* dead owners' slots cleared */
        assert_int_equal(m->slots[11], 0);
        assert_true(m->slots[12] == mine);
        assert_true(m->slots[13] == (uint64_t) getpid());
        m->slots[12] = m->slots[13] = 0;

        /* A table full of reused-pid slots: begin takes one over. */
        for (unsigned i = 0; i < STATS_SLOTS; i++)
                m->slots[i] = other_start;
        slot = stats_run_begin(s);
        assert_in_range(slot, 0, STATS_SLOTS - 1);
        assert_true(m->slots[slot] == mine);
        assert_int_equal(stats_count_active(s), 1);
        stats_run_end(s, slot);
        assert_int_equal(stats_count_active(s), 0);
        unmap_file(m);
}

/* ---- percentiles ---- */

static uint64_t estimate_of(uint64_t v) {
        StatsSnapshot snap = {};

        snap.latency[PY].buckets[stats_latency_bucket(v)] = 1;
        return stats_snapshot_percentile(&snap, PY, 0.5);
}

/* The bound of stats.h: v/16 inside the range, 64 µs below it, a lower bound of 2^32 µs above it. */
static void assert_within_bound(uint64_t estimate, uint64_t v) {
        if (v < 128) {
                assert_int_equal(estimate, 64);
                return;
        }
        if (v >= (1ULL << 32)) {
                assert_int_equal(estimate, 1ULL << 32);
                return;
        }
        if (estimate > v)
                assert_true(estimate - v <= v / 16);
        else
                assert_true(v - estimate <= v / 16);
}

static void test_latency_buckets(void **state) {
        uint64_t lower, upper, prev_upper = 0;

        assert_int_equal(STATS_LATENCY_BUCKETS, 202);
        for (unsigned i = 0; i < STATS_LATENCY_BUCKETS; i++) {
                stats_latency_bucket_bounds(i, &lower, &upper);
                assert_true(lower < upper);
                assert_true(lower == prev_upper); /* contiguous, no gaps, no overlaps */
                assert_int_equal(stats_latency_bucket(lower), i);
                assert_int_equal(stats_latency_bucket(upper - 1), i);
                if (i > 0 && i < STATS_LATENCY_BUCKETS - 1)
                        assert_true((upper - lower) * 8 <= lower); /* at most 1/8 of the values inside */
                prev_upper = upper;
        }
        assert_true(prev_upper == UINT64_MAX);
        assert_int_equal(stats_latency_bucket(0), 0);
        assert_int_equal(stats_latency_bucket(127), 0);
        assert_int_equal(stats_latency_bucket(128), 1);
        assert_int_equal(stats_latency_bucket(143), 1);
        assert_int_equal(stats_latency_bucket(144), 2);
        stats_latency_bucket_bounds(STATS_LATENCY_BUCKETS - 1, &lower, &upper);
        assert_true(lower >= 3600ULL * 1000000ULL); /* an hour still has buckets of its own */
        assert_true(stats_latency_bucket(3600ULL * 1000000ULL) < STATS_LATENCY_BUCKETS - 1);
        assert_int_equal(stats_latency_bucket(UINT64_MAX), STATS_LATENCY_BUCKETS - 1);
}

static void test_percentile_edges(void **state) {
        StatsSnapshot snap = {};

        /* empty: 0 */
        assert_int_equal(stats_snapshot_percentile(&snap, PY, 0.5), 0);
        assert_int_equal(stats_snapshot_percentile(&snap, PY, 0.99), 0);
        assert_int_equal(stats_snapshot_percentile(NULL, PY, 0.5), 0);

        /* a single value, whatever q */
        snap.latency[NODE].buckets[stats_latency_bucket(250000)] = 1;
        assert_int_equal(stats_snapshot_percentile(&snap, PY, 0.5), 0); /* other language */
        assert_int_equal(stats_snapshot_percentile(&snap, STATS_LANGUAGES, 0.5), 0);
        for (double q = 0; q <= 1.0; q += 0.125) /* stats.h: 8 sub-buckets, a middle estimate */
                assert_within_bound(stats_snapshot_percentile(&snap, NODE, q), 250000);
        assert_within_bound(stats_snapshot_percentile(&snap, NODE, -1), 250000);
        assert_within_bound(stats_snapshot_percentile(&snap, NODE, 7), 250000);
        assert_within_bound(stats_snapshot_percentile(&snap, NODE, __builtin_nan("")), 250000);

        /* beyond the range, both ways */
        assert_int_equal(estimate_of(0), 64);
        assert_int_equal(estimate_of(50), 64);
        assert_int_equal(estimate_of(127), 64);
        assert_int_equal(estimate_of(10ULL * 3600 * 1000000), 1ULL << 32);
        assert_int_equal(estimate_of(UINT64_MAX), 1ULL << 32);

        /* q picks the nearest rank: 1 small, 1 large value */
        memset(&snap, 0, sizeof(snap));
        snap.latency[PY].buckets[stats_latency_bucket(1000)] = 1;
        snap.latency[PY].buckets[stats_latency_bucket(1000000)] = 1;
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0), 1000);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0.5), 1000);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0.51), 1000000);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 1), 1000000);
}

static uint64_t lcg(uint64_t *x) {
        *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
        return *x >> 11;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Nearest rank of sorted[0..n): the smallest value with at least q*n values at or below it. */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double q) {
        size_t rank = (size_t) (q * (double) n);

        if ((double) rank < q * (double) n)
                rank++;
        if (rank < 1)
                rank = 1;
        return sorted[rank - 1];
}

static void test_percentile_single_values_within_bound(void **state) {
        uint64_t x = 42;

        /* every bucket edge and its neighbours, then random values over the whole range */
        for (unsigned i = 0; i < STATS_LATENCY_BUCKETS; i++) {
                uint64_t lower, upper;

                stats_latency_bucket_bounds(i, &lower, &upper);
                assert_within_bound(estimate_of(lower), lower);
                if (lower > 0)
                        assert_within_bound(estimate_of(lower - 1), lower - 1);
                assert_within_bound(estimate_of(upper - 1), upper - 1);
        }
        for (int i = 0; i < 200000; i++) {
                uint64_t v = lcg(&x) >> (lcg(&x) % 53); /* spread over every octave */

                assert_within_bound(estimate_of(v), v);
        }
}

static void test_percentile_distributions_within_bound(void **state) {
        static const double qs[] = { 0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1 };
        enum { N = 20000 };
        uint64_t *values = malloc(N * sizeof(uint64_t)), x = 7;
        StatsSnapshot snap = {};

        assert_non_null(values);
        for (int dist = 0; dist < 4; dist++) {
                memset(&snap, 0, sizeof(snap));
                for (int i = 0; i < N; i++) {
                        switch (dist) {
                        case 0: /* uniform 1 ms .. 20 s */
                                values[i] = (uint64_t) (i + 1) * 1000;
                                break;
                        case 1: /* long tail: mostly fast, a few slow */
                                values[i] =
                                        2000 + lcg(&x) % 20000 + (i % 100 == 0 ? lcg(&x) % 600000000 : 0);
                                break;
                        case 2: /* log-uniform 100 µs .. ~2 h, across the range's ends */
                                values[i] = 100 + (lcg(&x) >> (lcg(&x) % 40 + 11));
                                break;
                        default: /* two clusters */
                                values[i] = i % 2 ? 150000 + lcg(&x) % 1000 : 3000 + lcg(&x) % 100;
                                break;
                        }
                        snap.latency[NODE].buckets[stats_latency_bucket(values[i])]++;
                }
                qsort(values, N, sizeof(uint64_t), cmp_u64);
                for (size_t k = 0; k < ELEMENTSOF(qs); k++) {
                        uint64_t want = exact_percentile(values, N, qs[k]);

                        assert_within_bound(stats_snapshot_percentile(&snap, NODE, qs[k]), want);
                }
        }
        free(values);
}

/* The same arithmetic on counts recorded through the file: 1..1000 ms. */
static void test_percentile_recorded(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        StatsSnapshot snap;

        assert_int_equal(stats_open(f->dir, &s), 0);
        for (uint64_t ms = 1; ms <= 1000; ms++)
                stats_record_run(s, PY, STATS_RESULT_OK, ms * 1000);
        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0.50), 500000);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0.95), 950000);
        assert_within_bound(stats_snapshot_percentile(&snap, PY, 0.99), 990000);
        assert_int_equal(stats_snapshot_percentile(&snap, NODE, 0.5), 0);
        assert_int_equal(snap.latency[PY].sum_usec, 500500ULL * 1000);
}

/* ---- the file ---- */

static void test_reopen_keeps_counts(void **state) {
        Fixture *f = *state;
        Stats *s = NULL, *t = NULL;
        StatsSnapshot a, b;
        uint64_t before, after;
        ino_t ino;

        before = now(CLOCK_REALTIME);
        assert_int_equal(stats_open(f->dir, &s), 0);
        after = now(CLOCK_REALTIME);
        ino = inode_of(f->path);
        stats_record_run(s, PY, STATS_RESULT_OK, 5000);
        stats_record_run(s, NODE, STATS_RESULT_TIMEOUT, 15000000);
        stats_add_egress_denials(s, 9);
        assert_int_equal(stats_config_generation(s), 0);
        stats_bump_config_generation(s);
        stats_bump_config_generation(s);
        assert_int_equal(stats_snapshot(s, &a), 0);
        assert_true(a.created_realtime_usec >= before && a.created_realtime_usec <= after);
        s = stats_close(s);
        assert_null(s);

        /* the reader restarts: same file, same counts, same creation time */
        assert_int_equal(stats_open(f->dir, &s), 0);
        assert_true(inode_of(f->path) == ino);
        assert_int_equal(stats_snapshot(s, &b), 0);
        assert_memory_equal(&a, &b, sizeof(a));
        assert_int_equal(b.runs[PY][STATS_RESULT_OK], 1);
        assert_int_equal(b.runs[NODE][STATS_RESULT_TIMEOUT], 1);
        assert_int_equal(b.egress_denials, 9);
        assert_int_equal(b.config_generation, 2);

        /* two handles see each other's writes at once */
        assert_int_equal(stats_open(f->dir, &t), 0);
        stats_bump_config_generation(t);
        assert_int_equal(stats_config_generation(s), 3);
        stats_record_run(s, PY, STATS_RESULT_OK, 5000);
        assert_int_equal(stats_snapshot(t, &b), 0);
        assert_int_equal(b.runs[PY][STATS_RESULT_OK], 2);
        s = stats_close(s);
        t = stats_close(t);
}

static void test_umask_and_missing_dir(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        char dir[128], path[160];
        mode_t old;

        snprintf(dir, sizeof(dir), "%s/run", f->dir);
        snprintf(path, sizeof(path), "%s/stats", dir);
        old = umask(077);
        assert_int_equal(stats_open(dir, &s), 0); /* creates the state directory too */
        umask(old);
        assert_good_file(path); /* 0644 whatever the umask */
        assert_int_equal(stats_open(NULL, &s), -EINVAL);
}

/* Each kind of bad file is replaced by a fresh one, whose counts start at zero and then persist. */
static void test_bad_file_replaced(void **state) {
        Fixture *f = *state;
        _cleanup_free_ StatsFile *good = calloc(1, sizeof(StatsFile));
        char newpath[160];

        assert_non_null(good);
        snprintf(newpath, sizeof(newpath), "%s/stats.new", f->dir);
        for (int kind = 0; kind < 8; kind++) {
                Stats *s = NULL;
                StatsFile bad = {};
                StatsSnapshot snap;
                ino_t ino = 0;

                (void) unlink(f->path);
                *good = (StatsFile){ .magic = STATS_FILE_MAGIC,
                                     .version = STATS_FILE_VERSION,
                                     .size = sizeof(StatsFile) };
                good->runs[PY][STATS_RESULT_OK] = 77; /* must not survive */
                switch (kind) {
                case 0: /* empty */
                        write_file(f->path, "", 0);
                        break;
                case 1: /* truncated */
                        write_file(f->path, good, sizeof(StatsFile) / 2);
                        break;
                case 2: /* foreign */
                        good->magic = 0x1234;
                        write_file(f->path, good, sizeof(StatsFile));
                        break;
                case 3: /* another layout version of the same size */
                        good->version = STATS_FILE_VERSION + 1;
                        write_file(f->path, good, sizeof(StatsFile));
                        break;
                case 4: /* a header that claims another size */
                        good->size = sizeof(StatsFile) + 8;
                        write_file(f->path, good, sizeof(StatsFile));
                        break;
                case 5: /* an older, smaller layout */
                        bad = (StatsFile){ .magic = STATS_FILE_MAGIC, .version = 0, .size = 64 };
                        write_file(f->path, &bad, 64);
                        break;
                case 6: /* version 1: the layout before the pool counts, with its counts */
                        good->version = 1;
                        good->size = sizeof(StatsFile) - sizeof(good->pool_hits) - sizeof(good->pool_misses);
                        write_file(f->path, good, good->size);
                        break;
                default: /* a symlink, and a stats.new left by a creator killed before its rename */
                        write_file(newpath, "half", 4);
                        assert_int_equal(symlink("/dev/zero", f->path), 0);
                        break;
                }
                if (kind != 7)
                        ino = inode_of(f->path);

                assert_int_equal(stats_open(f->dir, &s), 0);
                assert_good_file(f->path);
                if (kind != 7)
                        assert_true(inode_of(f->path) != ino); /* a new file, not rewritten in place */
                assert_int_equal(access(newpath, F_OK), -1);
                assert_int_equal(stats_snapshot(s, &snap), 0);
                assert_int_equal(snap.runs[PY][STATS_RESULT_OK], 0);
                assert_int_equal(snap.pool_hits[PY], 0);
                stats_record_run(s, PY, STATS_RESULT_OK, 1000);
                stats_record_pool(s, PY, true);
                s = stats_close(s);

                /* good now: reopened as is */
                ino = inode_of(f->path);
                assert_int_equal(stats_open(f->dir, &s), 0);
                assert_true(inode_of(f->path) == ino);
                assert_int_equal(stats_snapshot(s, &snap), 0);
                assert_int_equal(snap.runs[PY][STATS_RESULT_OK], 1);
                assert_int_equal(snap.pool_hits[PY], 1);
                s = stats_close(s);
        }
}

/* A process that may not write the file (mode 0644, another owner) reads it and records nothing. */
static int read_only_child(const Fixture *f) {
        Stats *s = NULL;
        StatsSnapshot snap;

        if (geteuid() == 0) {
                if (chmod(f->dir, 0755) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                        return 10;
        } else if (chmod(f->path, 0444) < 0)
                return 11;
        if (stats_open(f->dir, &s) < 0)
                return 12;
        if (stats_snapshot(s, &snap) < 0 || snap.runs[PY][STATS_RESULT_OK] != 1 ||
            snap.config_generation != 1)
                return 13;
        stats_record_run(s, PY, STATS_RESULT_OK, 1000);
        stats_record_rejected(s, STATS_LANGUAGE_UNKNOWN);
        stats_add_egress_denials(s, 1);
        stats_record_pool(s, PY, true);
        stats_bump_config_generation(s);
        if (stats_run_begin(s) != -EROFS)
                return 14;
        if (stats_config_generation(s) != 1)
                return 15;
        s = stats_close(s);
        return 0;
}

/* Admission: the wait of admitted runs as a histogram per language, and 503s at max_requests per language
 * (unknown apart); both seen through a viewer's read-only mapping, which creates and replaces nothing. */
static void test_admission_and_readonly_viewer(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL, *viewer = NULL;
        StatsSnapshot snap;
        struct stat st;

        assert_int_equal(stats_open_readonly(f->dir, &viewer), -ENOENT);
        assert_int_equal(stat(f->path, &st), -1); /* a viewer made no file */

        assert_int_equal(stats_open(f->dir, &s), 0);
        stats_record_admission_wait(s, PY, 0);
        stats_record_admission_wait(s, PY, 300000);
        stats_record_admission_wait(s, NODE, 1000);
        stats_record_admission_wait(s, STATS_LANGUAGES, 1000); /* not counted */
        stats_record_refused_max_requests(s, NODE);
        stats_record_refused_max_requests(s, STATS_LANGUAGE_UNKNOWN);
        stats_record_refused_max_requests(s, 7);

        assert_int_equal(stats_open_readonly(f->dir, &viewer), 0);
        stats_record_run(viewer, PY, STATS_RESULT_OK, 1000); /* does nothing: read-only */
        assert_int_equal(stats_snapshot(viewer, &snap), 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_OK], 0);
        assert_int_equal(snap.admission.wait[PY].count, 2);
        assert_int_equal(snap.admission.wait[PY].sum_usec, 300000);
        assert_int_equal(snap.admission.wait[PY].buckets[0], 1);
        assert_int_equal(snap.admission.wait[PY].buckets[stats_latency_bucket(300000)], 1);
        assert_int_equal(snap.admission.wait[NODE].count, 1);
        assert_int_equal(snap.admission.refused_max_requests[PY], 0);
        assert_int_equal(snap.admission.refused_max_requests[NODE], 1);
        assert_int_equal(snap.admission.refused_max_requests[STATS_LANGUAGES], 2);
        /* the run latency is apart */
        assert_int_equal(snap.latency[PY].count, 0);
}

static void test_read_only(void **state) {
        Fixture *f = *state;
        _cleanup_(stats_closep) Stats *s = NULL;
        StatsSnapshot snap;
        int status;
        pid_t pid;

        assert_int_equal(stats_open(f->dir, &s), 0);
        stats_record_run(s, PY, STATS_RESULT_OK, 1000);
        stats_bump_config_generation(s);

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(read_only_child(f));
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);

        assert_int_equal(stats_snapshot(s, &snap), 0);
        assert_int_equal(snap.runs[PY][STATS_RESULT_OK], 1);
        assert_int_equal(snap.rejected_unknown_language, 0);
        assert_int_equal(snap.egress_denials, 0);
        assert_int_equal(snap.pool_hits[PY], 0);
        assert_int_equal(snap.config_generation, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_result_names),
                cmocka_unit_test(test_result_from_run),
                cmocka_unit_test_setup_teardown(test_counts_by_result, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_hits_and_misses, setup, teardown),
                cmocka_unit_test(test_null_is_harmless),
                cmocka_unit_test_setup_teardown(test_concurrent_processes_count_exactly, setup, teardown),
                cmocka_unit_test_setup_teardown(test_concurrent_creation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_begin_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_killed_owner_slots_reclaimed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_owner_identity, setup, teardown),
                cmocka_unit_test(test_latency_buckets),
                cmocka_unit_test(test_percentile_edges),
                cmocka_unit_test(test_percentile_single_values_within_bound),
                cmocka_unit_test(test_percentile_distributions_within_bound),
                cmocka_unit_test_setup_teardown(test_percentile_recorded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reopen_keeps_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_umask_and_missing_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_file_replaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admission_and_readonly_viewer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
