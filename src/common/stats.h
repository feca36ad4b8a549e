#pragma once
/* stats: owns <state_dir>/stats, the run statistics shared by every worker and the manager: runs by
 * language and result, latency histograms, egress denials, the runs active right now, and the config
 * generation the manager publishes. Nobody else writes that file.
 *
 * The file is mmap()ed MAP_SHARED and updated only with __atomic operations, never under a lock, so a
 * process SIGKILLed at any instant corrupts and wedges nothing: each counter is one atomic add, and an
 * active run is one 64-bit slot word that names its owner (pid and start time), so a dead owner's slot
 * is recognised and reused. Counters are independent words: a worker killed between two adds of one
 * run leaves, say, a run counted whose latency is not; nothing else.
 *
 * Runs are also counted as pool hits (served by a prepared run of the runner's warm pool) or misses
 * (prepared on demand), per language, so an operator can tell whether pool_size fits the load.
 *
 * The file lives in /run (tmpfs): it survives restarts of the manager and of workers, not a reboot
 * (created_realtime_usec says since when it counts). Creation and replacement of a file whose header
 * does not match (another layout version, a truncated or foreign file) happen under flock() of
 * <state_dir>/stats.lock, through <state_dir>/stats.new renamed into place, so the name only ever refers
 * to a complete file and two processes never replace each other's fresh file. Opening a good file
 * takes no lock.
 *
 * Every recording function accepts s == NULL and does nothing: a worker that could not open the file
 * still serves runs. None of them logs, waits or fails a run; only the slow path of stats_run_begin()
 * (a table without an empty slot) reads /proc. */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"
#include "run-result.h"

/* Languages are indexes, as enum Language of src/runtime/runtime.h: 0 = python3, 1 = nodejs. */
#define STATS_LANGUAGES 2U
#define STATS_LANGUAGE_UNKNOWN UINT_MAX /* for stats_record_rejected(): the request named none we know */

/* Every RunResult (common/run-result.h), by the same value and name, then "rejected" (HTTP 503,
 * overload), which no run has. The values index runs[][] of the file: a new RunResult moves
 * STATS_RESULT_REJECTED and the file's size, so an old file is replaced (see StatsFile). */
typedef enum StatsResult {
        STATS_RESULT_OK = RUN_RESULT_OK,
        STATS_RESULT_ERROR = RUN_RESULT_ERROR,
        STATS_RESULT_TIMEOUT = RUN_RESULT_TIMEOUT,
        STATS_RESULT_MEMORY = RUN_RESULT_MEMORY,
        STATS_RESULT_SECCOMP = RUN_RESULT_SECCOMP,
        STATS_RESULT_OUTPUT_TRUNCATED = RUN_RESULT_OUTPUT_TRUNCATED,
        STATS_RESULT_REJECTED = _RUN_RESULT_MAX,
        _STATS_RESULT_MAX,
        _STATS_RESULT_INVALID = -EINVAL,
} StatsResult;

/* A run's result as counted: the same value; _STATS_RESULT_INVALID for an invalid one. */
static inline StatsResult stats_result_from_run(RunResult result) {
        return result >= 0 && result < _RUN_RESULT_MAX ? (StatsResult) result : _STATS_RESULT_INVALID;
}
/* run_result_to_string()'s name, or "rejected"; NULL if invalid. */
const char *stats_result_to_string(StatsResult result);

/* Latency histogram, log-linear in microseconds: bucket 0 holds [0, 128 µs); then each power of two from
 * 2^7 µs to 2^32 µs (71.6 min) is cut into 8 equal sub-buckets; the last bucket holds >= 2^32 µs.
 *
 * Error bound of stats_snapshot_percentile(): it returns the middle of the bucket holding the exact
 * (nearest-rank) percentile v, and a bucket of the octave [2^k, 2^(k+1)) is 2^(k-3) wide, so
 * |estimate - v| <= 2^(k-4) <= v/16 (6.25%) for 128 µs <= v < 2^32 µs. Below 128 µs the estimate is
 * 64 µs (off by at most 64 µs); at or above 2^32 µs it is 2^32 µs (a lower bound). */
#define STATS_LATENCY_SUB_BITS 3U   /* 8 sub-buckets per power of two */
#define STATS_LATENCY_MIN_SHIFT 7U  /* 2^7 µs = 128 µs */
#define STATS_LATENCY_MAX_SHIFT 32U /* 2^32 µs = 71.6 min */
#define STATS_LATENCY_BUCKETS \
        (2U + ((STATS_LATENCY_MAX_SHIFT - STATS_LATENCY_MIN_SHIFT) << STATS_LATENCY_SUB_BITS))

/* The bucket that holds usec, and the [lower, upper) bounds of bucket i (upper is UINT64_MAX for the
 * last one). For exporters and tests. */
unsigned stats_latency_bucket(uint64_t usec);
void stats_latency_bucket_bounds(unsigned i, uint64_t *ret_lower, uint64_t *ret_upper);

/* Active runs: one slot per run in flight. A slot word is 0 when free, else
 * (start time << STATS_SLOT_PID_BITS) | pid of the process that took it, with its start time (field 22
 * of /proc/<pid>/stat, clock ticks since boot) cut to the remaining 42 bits. A word whose process is
 * gone, is a zombie, or has another start time (the pid was reused) belongs to nobody. */
#define STATS_SLOTS 1024U
#define STATS_SLOT_PID_BITS 22U /* PID_MAX_LIMIT is 2^22 */

/* The file, as it is on disk and in memory. A change of this layout bumps STATS_FILE_VERSION; a file
 * whose magic, version or size differ is replaced by a fresh one. */
#define STATS_FILE_MAGIC UINT64_C(0x5441545342534453) /* "DSBSTATS" read as little-endian */
#define STATS_FILE_VERSION 4U /* 2: pool_hits, pool_misses; 3: StatsAdmission; 4: refused_calls */

/* System call numbers counted in refused_calls[][]: every number of x86-64 and arm64 is below this. */
#define STATS_SYSCALLS 512U

typedef struct StatsLatency {
        uint64_t count;
        uint64_t sum_usec;
        uint64_t buckets[STATS_LATENCY_BUCKETS];
} StatsLatency;

/* Admission (the runner's admit.c): how long admitted runs waited for a worker slot, and the requests
 * refused because max_requests were in flight (HTTP 503), each also counted as rejected in runs[][]. For
 * the Prometheus exporter (difysandbox-metrics.socket); appended whole so that the layout grows at the
 * end only. */
typedef struct StatsAdmission {
        StatsLatency wait[STATS_LANGUAGES];                 /* admitted runs: the time queued, 0 included */
        uint64_t refused_max_requests[STATS_LANGUAGES + 1]; /* the last one: no language known */
} StatsAdmission;

typedef struct StatsFile {
        /* header, written once at creation */
        uint64_t magic;
        uint32_t version;
        uint32_t reserved;
        uint64_t size; /* sizeof(StatsFile) */
        uint64_t created_realtime_usec;
        /* bumped by the manager after it publishes a new config; workers read it per request */
        uint64_t config_generation;

        uint64_t runs[STATS_LANGUAGES][_STATS_RESULT_MAX];
        uint64_t rejected_unknown_language; /* 503s before the language was known */
        uint64_t egress_denials;
        uint64_t pool_hits[STATS_LANGUAGES];   /* runs a prepared run of the warm pool served */
        uint64_t pool_misses[STATS_LANGUAGES]; /* runs prepared on demand: no fitting one was idle */
        StatsLatency latency[STATS_LANGUAGES]; /* finished runs only: rejected requests have no latency */
        /* calls the runs' filters refused, by native number (src/sandbox/refusals.h): what users' code
         * needs that the policy does not allow, so an operator can decide on allowed_syscalls */
        uint64_t refused_calls[STATS_LANGUAGES][STATS_SYSCALLS];
        uint64_t slots[STATS_SLOTS];
        StatsAdmission admission;
} StatsFile;

typedef struct Stats Stats;

/* Opens <state_dir>/stats, creating <state_dir> and a fresh file if missing, or replacing a file whose
 * header does not match (logged as a warning). Read-write when possible; a process that may not write
 * the file (mode 0644, another owner) gets it read-only: its snapshots work, its recording functions do
 * nothing. -ETIMEDOUT if the creation lock is held for more than a second. */
int stats_open(const char *state_dir, Stats **ret);
/* For viewers (difysandboxctl top): maps an existing file read-only, and never creates or replaces one.
 * -ENOENT when there is none yet, -EBADMSG when it has another layout (the runners are of another
 * version). Snapshots work; recording functions do nothing. */
int stats_open_readonly(const char *state_dir, Stats **ret);
Stats *stats_close(Stats *s); /* NULL-safe, returns NULL */
DEFINE_POINTER_CLEANUP(Stats *, stats_close);

/* Counts one finished run: its result and latency. STATS_RESULT_REJECTED is counted as
 * stats_record_rejected() counts it (no latency). An unknown language or result is not counted. */
void stats_record_run(Stats *s, unsigned language, StatsResult result, uint64_t duration_usec);
/* Counts a request refused for overload: under its language if known (runs[language][REJECTED]), else
 * (language >= STATS_LANGUAGES, e.g. STATS_LANGUAGE_UNKNOWN) in rejected_unknown_language. */
void stats_record_rejected(Stats *s, unsigned language);
void stats_add_egress_denials(Stats *s, uint64_t n);
/* Counts the time an admitted run waited in the queue for a worker slot. An unknown language is not
 * counted. */
void stats_record_admission_wait(Stats *s, unsigned language, uint64_t waited_usec);
/* Counts a request refused because max_requests were in flight, under its language if known, else
 * under "unknown" (language >= STATS_LANGUAGES). Call stats_record_rejected() as well: this one only
 * says why. */
void stats_record_refused_max_requests(Stats *s, unsigned language);
/* Counts one run, finished or failed, as a pool hit (warm: a prepared run of the pool ran its code) or
 * a miss (the run was prepared after its request came). Rejected requests are neither. An unknown
 * language is not counted. */
void stats_record_pool(Stats *s, unsigned language, bool warm);
/* Counts count refusals of system call nr (native number) in a run of language; nr >= STATS_SYSCALLS is
 * not counted. */
void stats_record_refusal(Stats *s, unsigned language, unsigned nr, uint64_t count);

/* Marks a run of this process active: returns its slot, to be passed to stats_run_end(). -ENOSPC when
 * every slot is held by a live process, -EROFS/-EBADF for a read-only or NULL s: the run proceeds
 * uncounted either way. The fast path is a few atomic loads and one compare-and-swap; /proc is read
 * only when the table holds no empty slot. */
int stats_run_begin(Stats *s);
void stats_run_end(Stats *s, int slot); /* a negative slot is ignored */

uint64_t stats_config_generation(const Stats *s); /* 0 for NULL */
void stats_bump_config_generation(Stats *s);

/* Runs whose slot owner is alive. Clears the slots of dead owners it comes across (with
 * compare-and-swap, so a slot taken meanwhile is left alone), which keeps stats_run_begin() on its fast
 * path. */
unsigned stats_count_active(const Stats *s);

typedef struct StatsSnapshot {
        uint64_t created_realtime_usec;
        uint64_t config_generation;
        uint64_t runs[STATS_LANGUAGES][_STATS_RESULT_MAX];
        uint64_t rejected_unknown_language;
        uint64_t egress_denials;
        uint64_t pool_hits[STATS_LANGUAGES];
        uint64_t pool_misses[STATS_LANGUAGES];
        StatsLatency latency[STATS_LANGUAGES];
        uint64_t refused_calls[STATS_LANGUAGES][STATS_SYSCALLS];
        StatsAdmission admission;
        unsigned active_runs;
} StatsSnapshot;

/* A plain copy of the counters, each read atomically (not all at one instant), plus the active runs
 * as stats_count_active() counts them. -EBADF for NULL s. */
int stats_snapshot(const Stats *s, StatsSnapshot *ret);
/* Sum of runs[*][result] (for STATS_RESULT_REJECTED, rejected_unknown_language included). */
uint64_t stats_snapshot_total(const StatsSnapshot *snap, StatsResult result);
/* The q-quantile (0 <= q <= 1, e.g. 0.99) of the latency of language's runs, in microseconds, within
 * the bound documented above; 0 when there were no runs. q is clamped to [0, 1]. */
uint64_t stats_snapshot_percentile(const StatsSnapshot *snap, unsigned language, double q);
