/* metrics-format: the Prometheus text exposition (version 0.0.4) of the shared stats, the UID pool, the
 * dependency generations and the API socket's counters. See metrics.h; every name and label is listed in
 * docs/monitoring.md. Labels take their values from fixed vocabularies only (language names, result
 * names, "hit"/"miss"), so the number of series is bounded whatever the requests carry. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/generation.h"
#include "common/time-util.h"
#include "manager.h"
#include "metrics.h"
#include "runtime/runtime.h"

/* The histograms' upper bounds: every power of two of microseconds from 2^10 (1.024 ms) to 2^26
 * (67.1 s). Each is a bucket boundary of the stats histogram (stats.h), so the counts are exact. */
#define METRICS_LE_MIN_SHIFT 10U
#define METRICS_LE_MAX_SHIFT 26U
_Static_assert(METRICS_LE_MIN_SHIFT >= STATS_LATENCY_MIN_SHIFT &&
                       METRICS_LE_MAX_SHIFT < STATS_LATENCY_MAX_SHIFT,
               "the exported bounds are bounds of the stats histogram");

/* The result label: the and docs/monitoring.md's names, which Prometheus users expect; the
 * journal and GetStats say "memory" and "rejected" for the same. */
static const char *result_label(StatsResult res) {
        if (res == STATS_RESULT_MEMORY)
                return "oom";
        if (res == STATS_RESULT_REJECTED)
                return "refused";
        return stats_result_to_string(res);
}

static void header(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Microseconds as seconds, exactly: six decimals. */
static void seconds(FILE *f, uint64_t usec) {
        fprintf(f, "%" PRIu64 ".%06" PRIu64, usec / USEC_PER_SEC, usec % USEC_PER_SEC);
}

/* One histogram's series for one language, from the stats buckets: cumulative counts at each exported
 * bound, +Inf, _sum and _count. _count is the buckets' total (not the separate count word), so that
 * +Inf and _count agree even when a run was being counted during the read. */
static void histogram(FILE *f, const char *name, const char *language, const StatsLatency *l) {
        uint64_t cumulative = 0, total = 0;
        unsigned i = 0;

        for (unsigned b = 0; b < STATS_LATENCY_BUCKETS; b++)
                total += l->buckets[b];
        for (unsigned k = METRICS_LE_MIN_SHIFT; k <= METRICS_LE_MAX_SHIFT; k++) {
                uint64_t bound = UINT64_C(1) << k;

                for (; i < STATS_LATENCY_BUCKETS; i++) {
                        uint64_t lower, upper;

                        stats_latency_bucket_bounds(i, &lower, &upper);
                        if (upper > bound)
                                break;
                        cumulative += l->buckets[i];
                }
                fprintf(f, "%s_bucket{language=\"%s\",le=\"", name, language);
                seconds(f, bound);
                fprintf(f, "\"} %" PRIu64 "\n", cumulative);
        }
        fprintf(f, "%s_bucket{language=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, language, total);
        fprintf(f, "%s_sum{language=\"%s\"} ", name, language);
        seconds(f, l->sum_usec);
        fprintf(f, "\n%s_count{language=\"%s\"} %" PRIu64 "\n", name, language, total);
}

static void format_runs(FILE *f, const StatsSnapshot *snap) {
        header(f, "difysandbox_runs_total", "counter",
               "Run requests by language and result; refused: not run (max_requests, or no worker slot in "
               "time).");
        for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                for (StatsResult res = 0; res < _STATS_RESULT_MAX; res++)
                        fprintf(f, "difysandbox_runs_total{language=\"%s\",result=\"%s\"} %" PRIu64 "\n",
                                language_to_string((Language) l), result_label(res), snap->runs[l][res]);
        fprintf(f, "difysandbox_runs_total{language=\"unknown\",result=\"refused\"} %" PRIu64 "\n",
                snap->rejected_unknown_language);

        header(f, "difysandbox_requests_refused_max_requests_total", "counter",
               "Run requests answered 503 because max_requests were in flight (also in runs_total as "
               "refused).");
        for (unsigned l = 0; l <= STATS_LANGUAGES; l++)
                fprintf(f, "difysandbox_requests_refused_max_requests_total{language=\"%s\"} %" PRIu64 "\n",
                        l < STATS_LANGUAGES ? language_to_string((Language) l) : "unknown",
                        snap->admission.refused_max_requests[l]);

        header(f, "difysandbox_run_duration_seconds", "histogram",
               "Wall-clock time of finished runs, from the request to the result.");
        for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                histogram(f, "difysandbox_run_duration_seconds", language_to_string((Language) l),
                          &snap->latency[l]);

        header(f, "difysandbox_admission_wait_seconds", "histogram",
               "Time admitted runs waited for a worker slot (max_workers).");
        for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                histogram(f, "difysandbox_admission_wait_seconds", language_to_string((Language) l),
                          &snap->admission.wait[l]);
}

static void format_pool(FILE *f, const Manager *m, const StatsSnapshot *snap) {
        header(f, "difysandbox_pool_runs_total", "counter",
               "Runs by whether a prepared run of the warm pool served them (hit) or one was made on "
               "demand (miss).");
        for (unsigned l = 0; l < STATS_LANGUAGES; l++) {
                const char *name = language_to_string((Language) l);

                fprintf(f, "difysandbox_pool_runs_total{language=\"%s\",outcome=\"hit\"} %" PRIu64 "\n",
                        name, snap->pool_hits[l]);
                fprintf(f, "difysandbox_pool_runs_total{language=\"%s\",outcome=\"miss\"} %" PRIu64 "\n",
                        name, snap->pool_misses[l]);
        }

        header(f, "difysandbox_pool_prepared_runs", "gauge",
               "Prepared runs the warm pool keeps per language (pool_size.<language>; 0 when prewarm is "
               "off).");
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const uint32_t *size =
                        (const uint32_t *) ((const char *) &m->cfg + runtime_get(l)->pool_size_offset);

                fprintf(f, "difysandbox_pool_prepared_runs{language=\"%s\"} %" PRIu32 "\n",
                        language_to_string(l), m->cfg.prewarm ? *size : 0);
        }
}

static void format_gauges(FILE *f, Manager *m, const StatsSnapshot *snap) {
        uint32_t free_uids = 0;

        if (snap) {
                header(f, "difysandbox_runs_in_flight", "gauge", "Runs being made right now, host-wide.");
                fprintf(f, "difysandbox_runs_in_flight %u\n", snap->active_runs);
        }
        header(f, "difysandbox_max_workers", "gauge", "Runs allowed at once (max_workers).");
        fprintf(f, "difysandbox_max_workers %" PRIu32 "\n", m->cfg.max_workers);
        header(f, "difysandbox_max_requests", "gauge", "Run requests allowed in flight (max_requests).");
        fprintf(f, "difysandbox_max_requests %" PRIu32 "\n", m->cfg.max_requests);

        if (manager_uid_pool_free(m, &free_uids) >= 0) {
                header(f, "difysandbox_uid_pool_free", "gauge",
                       "UIDs of the run UID pool not held by a run.");
                fprintf(f, "difysandbox_uid_pool_free %" PRIu32 "\n", free_uids);
        }
        header(f, "difysandbox_uid_pool_size", "gauge", "UIDs in the run UID pool (uid_min to uid_max).");
        fprintf(f, "difysandbox_uid_pool_size %" PRIu32 "\n", m->cfg.uid_max - m->cfg.uid_min + 1);

        if (snap) {
                header(f, "difysandbox_egress_denials_total", "counter",
                       "Connections of runs with network that the egress policy refused.");
                fprintf(f, "difysandbox_egress_denials_total %" PRIu64 "\n", snap->egress_denials);
        }
}

static int format_generations(FILE *f, const Manager *m) {
        header(f, "difysandbox_dependency_generation", "gauge",
               "The dependency generation runs of each language use (0: none installed).");
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                _cleanup_free_ char *dir = NULL;
                uint64_t gen = 0;

                if (asprintf(&dir, "%s/%s/" PACKAGES_DIR_NAME, m->cfg.runtime_dir, language_to_string(l)) <
                    0)
                        return -ENOMEM;
                if (generation_current(dir, &gen) < 0)
                        gen = 0;
                fprintf(f, "difysandbox_dependency_generation{language=\"%s\"} %" PRIu64 "\n",
                        language_to_string(l), gen);
        }
        return 0;
}

static void format_socket(FILE *f, const MetricsSocketState *sock) {
        if (!sock->known)
                return; /* no answer from systemd yet, or no systemd: no series rather than made-up zeros */
        header(f, "difysandbox_socket_accepted_connections_total", "counter",
               "Connections difysandbox.socket accepted since it was started (systemd's NAccepted).");
        fprintf(f, "difysandbox_socket_accepted_connections_total %" PRIu32 "\n", sock->n_accepted);
        header(f, "difysandbox_socket_connections", "gauge",
               "Connections of difysandbox.socket open right now (systemd's NConnections).");
        fprintf(f, "difysandbox_socket_connections %" PRIu32 "\n", sock->n_connections);
        if (sock->has_refused) {
                header(f, "difysandbox_socket_refused_connections_total", "counter",
                       "Connections difysandbox.socket refused (systemd's NRefused: MaxConnections and "
                       "MaxConnectionsPerSource).");
                fprintf(f, "difysandbox_socket_refused_connections_total %" PRIu32 "\n", sock->n_refused);
        }
        header(f, "difysandbox_socket_failed", "gauge",
               "1 when difysandbox.socket is in the failed state: no new connection is accepted.");
        fprintf(f, "difysandbox_socket_failed %i\n", sock->failed ? 1 : 0);
}

int metrics_format(Manager *m, const MetricsSocketState *sock, const char *release, char **ret_text,
                   size_t *ret_len) {
        _cleanup_free_ char *text = NULL;
        StatsSnapshot snap = { 0 };
        size_t len = 0;
        bool have_stats;
        FILE *f;
        int r;

        have_stats = m->stats && stats_snapshot(m->stats, &snap) >= 0;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;

        header(f, "difysandbox_build_info", "gauge",
               "The difysandbox version, and the OS release it runs on.");
        fprintf(f, "difysandbox_build_info{version=\"%s\",release=\"%s\"} 1\n", VERSION, release);
        header(f, "difysandbox_manager_start_time_seconds", "gauge",
               "When difysandbox-manager started, in seconds since the epoch.");
        fprintf(f, "difysandbox_manager_start_time_seconds ");
        seconds(f, m->started_realtime_usec);
        fputc('\n', f);
        header(f, "difysandbox_stats_up", "gauge",
               "1 when the shared stats file could be read; the run series are missing otherwise.");
        fprintf(f, "difysandbox_stats_up %i\n", have_stats ? 1 : 0);
        if (have_stats) {
                header(f, "difysandbox_stats_start_time_seconds", "gauge",
                       "When the counters started counting (the stats file's creation; reset at boot), in "
                       "seconds since the epoch.");
                fprintf(f, "difysandbox_stats_start_time_seconds ");
                seconds(f, snap.created_realtime_usec);
                fputc('\n', f);
                format_runs(f, &snap);
                format_pool(f, m, &snap);
        }
        format_gauges(f, m, have_stats ? &snap : NULL);
        r = format_generations(f, m);
        format_socket(f, sock);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret_len = len;
        *ret_text = TAKE_PTR(text);
        return 0;
}
