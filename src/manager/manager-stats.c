/* manager-stats: GetStats and the run-related properties. The numbers come from the workers' shared
 * state (src/common/stats.h) and the UID pool (uidpool_count_free(), which takes no lock a run could
 * wait for). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <seccomp.h>

#include "common/cleanup.h"
#include "common/generation.h"
#include "common/time-util.h"
#include "manager.h"
#include "runtime/runtime.h"
#include "sandbox/uidpool.h"

int manager_uid_pool_free(Manager *m, uint32_t *ret) {
        int n;

        n = uidpool_count_free(m->cfg.state_dir, m->cfg.uid_min, m->cfg.uid_max);
        if (n < 0)
                return n;
        *ret = (uint32_t) n;
        return 0;
}

static int append_entry_begin(sd_bus_message *reply, const char *key, const char *signature) {
        int r = sd_bus_message_open_container(reply, 'e', "sv");

        if (r >= 0)
                r = sd_bus_message_append(reply, "s", key);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'v', signature);
        return r;
}

static int append_entry_end(sd_bus_message *reply) {
        int r = sd_bus_message_close_container(reply);

        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int append_runs(sd_bus_message *reply, const uint64_t runs[_STATS_RESULT_MAX],
                       uint64_t extra_rejected) {
        int r = sd_bus_message_open_container(reply, 'a', "{st}");

        for (StatsResult res = 0; r >= 0 && res < _STATS_RESULT_MAX; res++)
                r = sd_bus_message_append(reply, "{st}", stats_result_to_string(res),
                                          runs[res] + (res == STATS_RESULT_REJECTED ? extra_rejected : 0));
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* RunsByLanguage: the runs of each language by result. */
static int append_runs_by_language(sd_bus_message *reply, const StatsSnapshot *snap) {
        int r;

        r = append_entry_begin(reply, "RunsByLanguage", "a{sa{st}}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sa{st}}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++) {
                r = sd_bus_message_open_container(reply, 'e', "sa{st}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", language_to_string((Language) l));
                if (r >= 0)
                        r = append_runs(reply, snap->runs[l], 0);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);
        return r;
}

/* PoolByLanguage: per language, the runs a prepared run of the warm pool served (hits) and those
 * prepared on demand (misses). */
static int append_pool(sd_bus_message *reply, const StatsSnapshot *snap) {
        int r;

        r = append_entry_begin(reply, "PoolByLanguage", "a{sa{st}}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sa{st}}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++)
                r = sd_bus_message_append(reply, "{sa{st}}", language_to_string((Language) l), 2, "hits",
                                          snap->pool_hits[l], "misses", snap->pool_misses[l]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);
        return r;
}

/* RefusedCalls: per language, each system call the runs' filters refused and how often, by name. */
static int append_refused_calls(sd_bus_message *reply, const StatsSnapshot *snap) {
        int r;

        r = append_entry_begin(reply, "RefusedCalls", "a{sa{st}}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sa{st}}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++) {
                r = sd_bus_message_open_container(reply, 'e', "sa{st}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", language_to_string((Language) l));
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'a', "{st}");
                for (unsigned nr = 0; r >= 0 && nr < STATS_SYSCALLS; nr++) {
                        _cleanup_free_ char *name = NULL;
                        char number[32];

                        if (snap->refused_calls[l][nr] == 0)
                                continue;
                        name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int) nr);
                        (void) snprintf(number, sizeof(number), "syscall %u", nr);
                        r = sd_bus_message_append(reply, "{st}", name ? name : number,
                                                  snap->refused_calls[l][nr]);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);
        return r;
}

/* Latency: per language, the runs counted and their 50th, 95th and 99th percentiles. */
static int append_latency(sd_bus_message *reply, const StatsSnapshot *snap) {
        int r;

        r = append_entry_begin(reply, "Latency", "a{s(tttt)}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{s(tttt)}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++)
                r = sd_bus_message_append(reply, "{s(tttt)}", language_to_string((Language) l),
                                          snap->latency[l].count, stats_snapshot_percentile(snap, l, 0.50),
                                          stats_snapshot_percentile(snap, l, 0.95),
                                          stats_snapshot_percentile(snap, l, 0.99));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);
        return r;
}

/* DependencyGenerations: the current generation of each language, 0 for none. */
static int append_generations(sd_bus_message *reply, const Manager *m) {
        int r;

        r = append_entry_begin(reply, "DependencyGenerations", "a{st}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{st}");
        for (Language l = 0; r >= 0 && l < _LANGUAGE_MAX; l++) {
                _cleanup_free_ char *dir = NULL;
                uint64_t gen = 0;

                if (asprintf(&dir, "%s/%s/" PACKAGES_DIR_NAME, m->cfg.runtime_dir, language_to_string(l)) <
                    0)
                        return -ENOMEM;
                if (generation_current(dir, &gen) < 0)
                        gen = 0;
                r = sd_bus_message_append(reply, "{st}", language_to_string(l), gen);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);
        return r;
}

/* GetStats (org.difysandbox.Sandbox1(5) lists the keys). */
int manager_append_stats(Manager *m, sd_bus_message *reply) {
        StatsSnapshot snap = { 0 };
        uint64_t totals[_STATS_RESULT_MAX] = { 0 };
        uint32_t free_uids = 0;
        int r;

        if (m->stats)
                (void) stats_snapshot(m->stats, &snap);
        for (StatsResult res = 0; res < _STATS_RESULT_MAX; res++)
                for (unsigned l = 0; l < STATS_LANGUAGES; l++)
                        totals[res] += snap.runs[l][res];
        if (manager_uid_pool_free(m, &free_uids) < 0)
                free_uids = 0;

        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;

        r = append_entry_begin(reply, "RunsByResult", "a{st}");
        if (r >= 0)
                r = append_runs(reply, totals, snap.rejected_unknown_language);
        if (r >= 0)
                r = append_entry_end(reply);

        if (r >= 0)
                r = append_runs_by_language(reply, &snap);
        if (r >= 0)
                r = append_pool(reply, &snap);
        if (r >= 0)
                r = append_latency(reply, &snap);
        if (r >= 0)
                r = append_refused_calls(reply, &snap);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "ActiveRuns", "u", (uint32_t) snap.active_runs);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "UidPoolFree", "u", free_uids);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "UidPoolSize", "u",
                                          m->cfg.uid_max - m->cfg.uid_min + 1);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "EgressDenials", "t", snap.egress_denials);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "UptimeUSec", "t",
                                          now(CLOCK_MONOTONIC) - m->started_monotonic_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "StatsSinceUSec", "t", snap.created_realtime_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "ConfigLoadedAtUSec", "t",
                                          m->config_loaded_realtime_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "ConfigChangedOnDisk", "b",
                                          manager_config_changed_on_disk(m) > 0);

        if (r >= 0)
                r = append_generations(reply, m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}
