/* manager-stats: GetStats and the run-related properties. The numbers come from the workers' shared
 * state (src/common/stats.h) and the UID pool's lock files, read without taking any lock a run could
 * wait for: the free UIDs are counted from /proc/locks, not by trying the locks, which would make a
 * worker looking for a UID at that instant skip the ones being counted. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/generation.h"
#include "manager.h"
#include "runtime/runtime.h"

static int inode_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The pool's lock files are <state_dir>/uids/<uid> (src/sandbox/uidpool.c), flock()ed exclusively by
 * the run that has the UID. A UID is taken when /proc/locks lists a FLOCK on its file's inode. */
int manager_uid_pool_free(Manager *m, uint32_t *ret) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_(fclosep) FILE *locks = NULL;
        _cleanup_free_ char *dir = NULL, *line = NULL;
        _cleanup_free_ uint64_t *inodes = NULL;
        size_t n = 0, cap = 0, line_size = 0, taken = 0;
        uint32_t size = m->cfg.uid_max - m->cfg.uid_min + 1;
        dev_t dev = 0;
        struct dirent *de;
        struct stat st;

        if (asprintf(&dir, "%s/uids", m->cfg.state_dir) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT) { /* no run yet */
                        *ret = size;
                        return 0;
                }
                return -errno;
        }
        while ((de = readdir(d))) {
                char *end;
                unsigned long uid = strtoul(de->d_name, &end, 10);

                if (*end || de->d_name[0] < '0' || de->d_name[0] > '9' || uid < m->cfg.uid_min ||
                    uid > m->cfg.uid_max)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n == cap) {
                        uint64_t *p = realloc(inodes, (cap = cap ? cap * 2 : 64) * sizeof(uint64_t));
                        if (!p)
                                return -ENOMEM;
                        inodes = p;
                }
                inodes[n++] = st.st_ino;
                dev = st.st_dev;
        }
        if (n == 0) {
                *ret = size;
                return 0;
        }
        qsort(inodes, n, sizeof(uint64_t), inode_cmp);

        locks = fopen("/proc/locks", "re");
        if (!locks)
                return -errno;
        /* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters are "1: -> FLOCK ..." */
        while (getline(&line, &line_size, locks) > 0) {
                unsigned major, minor;
                uint64_t ino;
                char type[16];

                if (sscanf(line, "%*u: %15s %*s %*s %*d %x:%x:%" SCNu64, type, &major, &minor, &ino) != 4 ||
                    !streq(type, "FLOCK") || makedev(major, minor) != dev)
                        continue;
                if (bsearch(&ino, inodes, n, sizeof(uint64_t), inode_cmp))
                        taken++;
        }
        *ret = taken >= size ? 0 : (uint32_t) (size - taken);
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
                r = append_entry_begin(reply, "RunsByLanguage", "a{sa{st}}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{sa{st}}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++) {
                r = sd_bus_message_open_container(reply, 'e', "sa{st}");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", language_to_string((Language) l));
                if (r >= 0)
                        r = append_runs(reply, snap.runs[l], 0);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);

        if (r >= 0)
                r = append_entry_begin(reply, "Latency", "a{s(tttt)}");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{s(tttt)}");
        for (unsigned l = 0; r >= 0 && l < STATS_LANGUAGES; l++)
                r = sd_bus_message_append(reply, "{s(tttt)}", language_to_string((Language) l),
                                          snap.latency[l].count, stats_snapshot_percentile(&snap, l, 0.50),
                                          stats_snapshot_percentile(&snap, l, 0.95),
                                          stats_snapshot_percentile(&snap, l, 0.99));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_entry_end(reply);

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
                                          now_monotonic_usec() - m->started_monotonic_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "StatsSinceUSec", "t", snap.created_realtime_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "ConfigLoadedAtUSec", "t",
                                          m->config_loaded_realtime_usec);
        if (r >= 0)
                r = sd_bus_message_append(reply, "{sv}", "ConfigChangedOnDisk", "b",
                                          manager_config_changed_on_disk(m) > 0);

        if (r >= 0)
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

        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}
