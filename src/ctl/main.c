/* difysandboxctl: the administrator's command for the difysandbox manager over D-Bus (DESIGN §4,
 * difysandboxctl(1)): status, stats, dependencies, reload. main.c parses the command line, checks it
 * completely before anything is sent, and turns replies into tables; bus.c talks to the manager, job.c
 * follows a dependency job, format.c and table.c shape the text. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/parse.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "ctl/bus.h"
#include "ctl/ctl.h"
#include "ctl/format.h"
#include "ctl/job.h"
#include "ctl/table.h"
#include "ctl/top.h"
#include "runtime/runtime.h"

/* The parsed command line: a CLI runs once (STYLE.md allows these globals here). */
static bool arg_json = false;
static bool arg_no_wait = false;
static bool arg_if_due = false;
static const char *arg_config = NULL;
static const char *arg_language = NULL;
static unsigned arg_iterations = 0; /* top: 0 = until q or a signal */

/* Results of runs as the manager counts them, in the order they are shown; others follow, sorted. */
static const char *const known_results[] = { "ok", "error", "timeout", "memory", "seccomp", "rejected" };

static const char *const usage_text =
        "Usage: difysandboxctl [--json] status\n"
        "       difysandboxctl [--json] stats\n"
        "       difysandboxctl [--json] deps list LANGUAGE\n"
        "       difysandboxctl [--json] [--no-wait] deps install LANGUAGE PACKAGE...\n"
        "       difysandboxctl [--json] [--no-wait] deps remove LANGUAGE PACKAGE...\n"
        "       difysandboxctl [--json] [--no-wait] [--config FILE] deps refresh [--if-due] LANGUAGE\n"
        "       difysandboxctl reload\n"
        "       difysandboxctl [--config FILE] run FILE --language LANGUAGE\n"
        "       difysandboxctl [--config FILE] [-n N] top\n";

static void help(void) {
        (void) printf("%s"
                      "\n"
                      "Control the difysandbox manager (" MANAGER_BUS_NAME " on the system bus).\n"
                      "\n"
                      "Commands:\n"
                      "  status        version, uptime, active runs, UID pool, warm pool hits and misses,\n"
                      "                dependency generations, running jobs\n"
                      "  stats         runs by result and language, latency percentiles in ms, warm pool\n"
                      "                hits and misses\n"
                      "  deps list     the packages runs of LANGUAGE can import, with their versions\n"
                      "  deps install  install PACKAGEs into a new dependency generation, follow the job\n"
                      "  deps remove   a new dependency generation without PACKAGEs installed earlier,\n"
                      "                follow the job\n"
                      "  deps refresh  rebuild the dependency generation from the requirement file, follow\n"
                      "                the job\n"
                      "  reload        make the manager re-read its configuration\n"
                      "  run           run FILE (- for standard input) through the sandbox here, as\n"
                      "                difysandbox run does (root; no manager needed)\n"
                      "  top           live view of runs per second, latency, queue and the running\n"
                      "                runs' CPU and memory, every second (q quits, s sorts)\n"
                      "\n"
                      "Options:\n"
                      "  --json         print JSON (a job's: one object when it ends)\n"
                      "  --no-wait      install, remove, refresh: print the job's object path and return\n"
                      "  --if-due       refresh: only when the current generation is older than\n"
                      "                 python_deps_update_interval\n"
                      "  --config FILE  the configuration --if-due and run read (default: " CONFIG_FILE_MAIN
                      ")\n"
                      "  --language L   run: the interpreter of FILE\n"
                      "  -n N, --iterations N  top: stop after N refreshes\n"
                      "  -h, --help     print this help\n"
                      "  --version      print the version\n"
                      "\n"
                      "LANGUAGE is " RUNTIME_LANGUAGE_NAMES
                      ". Exit status: 0 success, 1 failed, 2 usage, 3 manager\n"
                      "unreachable, 4 permission denied. See difysandboxctl(1).\n",
                      usage_text);
}

/* A mistake on the command line: one line saying what, the usage, status 2. Nothing was sent. */
static __attribute__((format(printf, 1, 2))) int usage_error(const char *format, ...) {
        va_list ap;

        (void) fputs(CTL_PROGRAM ": ", stderr);
        va_start(ap, format);
        (void) vfprintf(stderr, format, ap);
        va_end(ap);
        (void) fprintf(stderr, "\n%s", usage_text);
        return CTL_EXIT_USAGE;
}

static int check_language(const char *language) {
        if (language_from_string(language) < 0)
                return usage_error("unknown language '%s': expected " RUNTIME_LANGUAGE_NAMES, language);
        return 0;
}

static bool json_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return false;
        *ret = json_object_get_uint64(v);
        return true;
}

static bool json_true(json_object *o, const char *key) {
        json_object *v;

        return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
               json_object_get_boolean(v);
}

static int print_json_or_oom(json_object *o) {
        int r = format_json_print(o);

        if (r < 0)
                ctl_error("cannot print the result: %s", strerror(-r));
        return r;
}

static bool names_contain(const char *const *names, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(names[i], name))
                        return true;
        return false;
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The rows or columns of a table: the known names first, in their order, then every other key of the
 * objects (a newer manager's), sorted. The names are borrowed from known and the objects. */
static int ordered_keys(const char *const *known, size_t n_known, json_object *const *objects,
                        size_t n_objects, const char ***ret, size_t *ret_n) {
        _cleanup_free_ const char **names = NULL;
        size_t n = 0, allocated = n_known;

        for (size_t i = 0; i < n_objects; i++)
                if (objects[i] && json_object_is_type(objects[i], json_type_object))
                        allocated += (size_t) json_object_object_length(objects[i]);
        names = calloc(allocated + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < n_known; i++)
                names[n++] = known[i];
        for (size_t i = 0; i < n_objects; i++) {
                if (!objects[i] || !json_object_is_type(objects[i], json_type_object))
                        continue;
                json_object_object_foreach(objects[i], key, value) {
                        (void) value;
                        if (!names_contain(names, n, key))
                                names[n++] = key;
                }
        }
        qsort(names + n_known, n - n_known, sizeof(char *), compare_names);
        *ret = TAKE_PTR(names);
        *ret_n = n;
        return 0;
}

static json_object *json_member(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!o || !json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

static JobOutput job_output(void) {
        const char *term = getenv("TERM");

        if (arg_json)
                return JOB_OUTPUT_JSON;
        if (isatty(STDOUT_FILENO) && !(term && streq(term, "dumb")))
                return JOB_OUTPUT_BAR;
        return JOB_OUTPUT_LINES;
}

static const char *age_suffix(char buf[static FORMAT_TIMESPAN_MAX + 8], uint64_t realtime_usec) {
        char span[FORMAT_TIMESPAN_MAX];
        uint64_t now_usec = now(CLOCK_REALTIME);

        if (realtime_usec == 0 || now_usec < realtime_usec)
                return "";
        (void) snprintf(buf, FORMAT_TIMESPAN_MAX + 8, " (%s ago)",
                        format_timespan(span, now_usec - realtime_usec));
        return buf;
}

/* A language's pool counts ({"hits", "misses"} of pool_by_language): false when the manager sent none. */
static bool pool_counts(json_object *pool, const char *language, uint64_t *ret_hits, uint64_t *ret_misses) {
        json_object *counts = json_member(pool, language);

        return json_u64(counts, "hits", ret_hits) && json_u64(counts, "misses", ret_misses);
}

/* "95%": the share of runs the pool served, rounded down so that 100% means not one miss; "-" without
 * runs. */
static const char *pool_hit_rate(char buf[static sizeof("100%")], uint64_t hits, uint64_t misses) {
        uint64_t total = hits + misses;

        if (total == 0 || total < hits) /* no runs, or counts past any real count */
                return "-";
        while (total > UINT64_MAX / 100) { /* hits * 100 must not overflow: halve both */
                hits >>= 1;
                total >>= 1;
        }
        (void) snprintf(buf, sizeof("100%"), "%" PRIu64 "%%", hits * 100 / total);
        return buf;
}

/* "Warm pool:      python3 95 hits, 5 misses (95%); nodejs 0 hits, 0 misses" */
static int print_status_pool(json_object *stats) {
        _cleanup_free_ const char **languages = NULL;
        const char *known_languages[_LANGUAGE_MAX];
        json_object *pool = json_member(stats, "pool_by_language");
        size_t n_languages, shown = 0;
        char rate[sizeof("100%")];
        uint64_t hits, misses;
        int r;

        if (!pool)
                return 0;
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                known_languages[l] = language_to_string(l);
        r = ordered_keys(known_languages, _LANGUAGE_MAX, &pool, 1, &languages, &n_languages);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_languages; i++) {
                if (!pool_counts(pool, languages[i], &hits, &misses))
                        continue;
                (void) printf("%s%s %" PRIu64 " hits, %" PRIu64 " misses",
                              shown++ == 0 ? "Warm pool:      " : "; ", languages[i], hits, misses);
                if (hits + misses > 0)
                        (void) printf(" (%s)", pool_hit_rate(rate, hits, misses));
        }
        if (shown > 0)
                (void) printf("\n");
        return 0;
}

/* "Refused calls:  python3 listxattr 3, getcpu 1; nodejs none": what users' code needed that the policy
 * does not allow (allowed_syscalls in difysandbox.conf(5)). Up to 8 calls per language, most refused first.
 */
static void print_status_refusals(json_object *stats) {
        json_object *refused = json_member(stats, "refused_calls");
        size_t shown = 0;

        if (!refused)
                return;
        json_object_object_foreach(refused, language, calls) {
                const char *top[8] = { 0 };
                uint64_t counts[8] = { 0 };
                size_t n = 0;

                json_object_object_foreach(calls, name, count) {
                        uint64_t c = (uint64_t) json_object_get_int64(count);
                        size_t at = n < 8 ? n : 8;

                        while (at > 0 && counts[at - 1] < c)
                                at--;
                        if (at >= 8)
                                continue;
                        for (size_t k = (n < 8 ? n : 7); k > at; k--) {
                                top[k] = top[k - 1];
                                counts[k] = counts[k - 1];
                        }
                        top[at] = name;
                        counts[at] = c;
                        if (n < 8)
                                n++;
                }
                (void) printf("%s%s", shown++ == 0 ? "Refused calls:  " : "; ", language);
                if (n == 0)
                        (void) printf(" none");
                for (size_t k = 0; k < n; k++)
                        (void) printf("%s %s %" PRIu64, k == 0 ? "" : ",", top[k], counts[k]);
        }
        if (shown > 0)
                (void) printf("\n");
}

/* status --json: the manager's figures under stable names. */
static int print_status_json(const char *version, json_object *stats, json_object *jobs) {
        static const char *const keys[] = { "uptime_usec",           "active_runs",
                                            "uid_pool_free",         "uid_pool_size",
                                            "pool_by_language",      "refused_calls",
                                            "config_loaded_at_usec", "dependency_generations",
                                            "config_changed_on_disk" };
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o || json_object_object_add(o, "version", json_object_new_string(version)) < 0)
                return ctl_oom();
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                json_object *v = json_member(stats, keys[i]);

                if (v && json_object_object_add(o, keys[i], json_object_get(v)) < 0)
                        return ctl_oom();
        }
        if (json_object_object_add(o, "jobs", json_object_get(jobs)) < 0)
                return ctl_oom();
        return print_json_or_oom(o);
}

static void print_status_jobs(json_object *jobs) {
        if (json_object_array_length(jobs) == 0)
                (void) printf("Jobs:           none\n");
        for (size_t i = 0; i < json_object_array_length(jobs); i++) {
                json_object *job = json_object_array_get_idx(jobs, i),
                            *progress = json_member(job, "progress");
                const char *state = json_object_get_string(json_member(job, "state"));

                (void) printf("%s%s (%s %s)", i == 0 ? "Jobs:           " : "                ",
                              json_object_get_string(json_member(job, "job")),
                              json_object_get_string(json_member(job, "kind")),
                              json_object_get_string(json_member(job, "language")));
                if (state)
                        (void) printf(": %s", state);
                if (progress)
                        (void) printf(", %i%%", (int) (json_object_get_double(progress) * 100.0));
                (void) printf("\n");
        }
}

static int verb_status(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(json_object_putp) json_object *stats = NULL, *jobs = NULL;
        _cleanup_free_ char *version = NULL;
        _cleanup_free_ const char **languages = NULL;
        const char *known_languages[_LANGUAGE_MAX];
        char span[FORMAT_TIMESPAN_MAX], stamp[FORMAT_TIMESTAMP_MAX], ago[FORMAT_TIMESPAN_MAX + 8];
        json_object *generations;
        size_t n_languages;
        uint64_t u, free_uids, pool_size;
        int r;

        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_get_version(bus, &version);
        if (r != 0)
                return r;
        r = bus_get_stats(bus, &stats);
        if (r != 0)
                return r;
        r = bus_list_jobs(bus, &jobs);
        if (r != 0)
                return r;

        if (arg_json)
                return print_status_json(version, stats, jobs);

        (void) printf("Version:        %s\n", version);
        if (json_u64(stats, "uptime_usec", &u))
                (void) printf("Uptime:         %s\n", format_timespan(span, u));
        if (json_u64(stats, "active_runs", &u))
                (void) printf("Active runs:    %" PRIu64 "\n", u);
        if (json_u64(stats, "uid_pool_free", &free_uids) && json_u64(stats, "uid_pool_size", &pool_size))
                (void) printf("UID pool:       %" PRIu64 " of %" PRIu64 " free\n", free_uids, pool_size);
        if (print_status_pool(stats) < 0)
                return ctl_oom();
        print_status_refusals(stats);
        if (json_u64(stats, "config_loaded_at_usec", &u))
                (void) printf("Config loaded:  %s%s\n", format_timestamp(stamp, u), age_suffix(ago, u));
        if (json_true(stats, "config_changed_on_disk"))
                (void) printf("Warning: the configuration files changed on disk and differ from the one in "
                              "force.\n"
                              "         Run 'difysandboxctl reload' to put them in force.\n");

        generations = json_member(stats, "dependency_generations");
        if (generations) {
                for (Language l = 0; l < _LANGUAGE_MAX; l++)
                        known_languages[l] = language_to_string(l);
                r = ordered_keys(known_languages, _LANGUAGE_MAX, &generations, 1, &languages, &n_languages);
                if (r < 0)
                        return ctl_oom();
                (void) printf("Generations:    ");
                for (size_t i = 0; i < n_languages; i++) {
                        if (json_u64(generations, languages[i], &u) && u > 0)
                                (void) printf("%s%s %" PRIu64, i > 0 ? ", " : "", languages[i], u);
                        else
                                (void) printf("%s%s none", i > 0 ? ", " : "", languages[i]);
                }
                (void) printf("\n");
        }

        print_status_jobs(jobs);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int add_ms(Table *t, json_object *latency, const char *key) {
        uint64_t usec, samples;

        if (!json_u64(latency, "samples", &samples) || samples == 0 || !json_u64(latency, key, &usec))
                return table_add(t, "-");
        return table_addf(t, "%.1f", (double) usec / 1000.0);
}

/* The stats' rows and columns: every language any part of them names, every result any of them counts. */
static int stats_names(json_object *stats, const char ***ret_languages, size_t *ret_n_languages,
                       const char ***ret_results, size_t *ret_n_results) {
        _cleanup_free_ const char **languages = NULL;
        json_object *by_language = json_member(stats, "runs_by_language"), *sources[8];
        const char *known_languages[_LANGUAGE_MAX];
        size_t n_languages, n_sources = 0;
        int r;

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                known_languages[l] = language_to_string(l);
        sources[n_sources++] = by_language;
        sources[n_sources++] = json_member(stats, "latency");
        sources[n_sources++] = json_member(stats, "pool_by_language");
        r = ordered_keys(known_languages, _LANGUAGE_MAX, sources, n_sources, &languages, &n_languages);
        if (r < 0)
                return r;
        n_sources = 0;
        sources[n_sources++] = json_member(stats, "runs_by_result");
        for (size_t i = 0; i < n_languages && n_sources < ELEMENTSOF(sources); i++)
                sources[n_sources++] = json_member(by_language, languages[i]);
        r = ordered_keys(known_results, ELEMENTSOF(known_results), sources, n_sources, ret_results,
                         ret_n_results);
        if (r < 0)
                return r;
        *ret_languages = TAKE_PTR(languages);
        *ret_n_languages = n_languages;
        return 0;
}

/* One row of the runs table: its name, the total, then the count of each result. */
static int add_runs_row(Table *t, const char *name, json_object *counts, const char *const *results,
                        size_t n_results) {
        uint64_t total = 0, u;
        int r;

        for (size_t i = 0; i < n_results; i++)
                if (json_u64(counts, results[i], &u))
                        total += u;
        r = table_add(t, name);
        if (r >= 0)
                r = table_addf(t, "%" PRIu64, total);
        for (size_t i = 0; r >= 0 && i < n_results; i++)
                r = table_addf(t, "%" PRIu64, json_u64(counts, results[i], &u) ? u : 0);
        return r;
}

/* One row per language, then "all": the manager's own count by result. */
static int runs_table_new(json_object *stats, const char *const *languages, size_t n_languages,
                          const char *const *results, size_t n_results, Table **ret) {
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_free_ const char **header = NULL;
        json_object *by_language = json_member(stats, "runs_by_language");
        int r;

        header = calloc(n_results + 3, sizeof(char *));
        if (!header)
                return -ENOMEM;
        header[0] = "LANGUAGE";
        header[1] = "TOTAL";
        for (size_t i = 0; i < n_results; i++)
                header[i + 2] = results[i];
        r = table_new(&t, header);
        if (r < 0)
                return r;
        for (size_t c = 1; c < n_results + 2; c++)
                table_set_align_right(t, c, true);
        for (size_t row = 0; row < n_languages; row++) {
                r = add_runs_row(t, languages[row], json_member(by_language, languages[row]), results,
                                 n_results);
                if (r < 0)
                        return r;
        }
        r = add_runs_row(t, "all", json_member(stats, "runs_by_result"), results, n_results);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

static int latency_table_new(json_object *stats, const char *const *languages, size_t n_languages,
                             Table **ret) {
        _cleanup_(table_freep) Table *t = NULL;
        json_object *latency = json_member(stats, "latency");
        uint64_t u;
        int r;

        r = table_new(&t,
                      (const char *const[]){ "LANGUAGE", "SAMPLES", "P50 MS", "P95 MS", "P99 MS", NULL });
        if (r < 0)
                return r;
        for (size_t c = 1; c < 5; c++)
                table_set_align_right(t, c, true);
        for (size_t row = 0; row < n_languages; row++) {
                json_object *l = json_member(latency, languages[row]);

                r = table_add(t, languages[row]);
                if (r >= 0)
                        r = table_addf(t, "%" PRIu64, json_u64(l, "samples", &u) ? u : 0);
                if (r >= 0)
                        r = add_ms(t, l, "p50_usec");
                if (r >= 0)
                        r = add_ms(t, l, "p95_usec");
                if (r >= 0)
                        r = add_ms(t, l, "p99_usec");
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

/* Per language: the runs a prepared run of the warm pool served, those prepared on demand, the share
 * served. NULL in *ret when the manager sent no pool counts (an older one). */
static int pool_table_new(json_object *stats, const char *const *languages, size_t n_languages,
                          Table **ret) {
        _cleanup_(table_freep) Table *t = NULL;
        json_object *pool = json_member(stats, "pool_by_language");
        char rate[sizeof("100%")];
        uint64_t hits, misses;
        int r;

        *ret = NULL;
        if (!pool)
                return 0;
        r = table_new(&t, (const char *const[]){ "LANGUAGE", "HITS", "MISSES", "HIT RATE", NULL });
        if (r < 0)
                return r;
        for (size_t c = 1; c < 4; c++)
                table_set_align_right(t, c, true);
        for (size_t row = 0; row < n_languages; row++) {
                if (!pool_counts(pool, languages[row], &hits, &misses))
                        hits = misses = 0;
                r = table_add(t, languages[row]);
                if (r >= 0)
                        r = table_addf(t, "%" PRIu64, hits);
                if (r >= 0)
                        r = table_addf(t, "%" PRIu64, misses);
                if (r >= 0)
                        r = table_add(t, pool_hit_rate(rate, hits, misses));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

static int print_stats(json_object *stats, Table *runs, Table *latency, Table *pool) {
        char stamp[FORMAT_TIMESTAMP_MAX], ago[FORMAT_TIMESPAN_MAX + 8];
        uint64_t u, u2;

        if (json_u64(stats, "stats_since_usec", &u))
                (void) printf("Runs since %s%s:\n\n", format_timestamp(stamp, u), age_suffix(ago, u));
        if (table_print(runs, stdout) < 0)
                return -EIO;
        (void) printf("\nLatency from admission to result:\n\n");
        if (table_print(latency, stdout) < 0)
                return -EIO;
        if (pool) {
                (void) printf("\nRuns served by the warm pool (hits) or prepared on demand (misses):\n\n");
                if (table_print(pool, stdout) < 0)
                        return -EIO;
        }
        (void) printf("\n");
        if (json_u64(stats, "active_runs", &u))
                (void) printf("Active runs:     %" PRIu64 "\n", u);
        if (json_u64(stats, "uid_pool_free", &u) && json_u64(stats, "uid_pool_size", &u2))
                (void) printf("UID pool:        %" PRIu64 " of %" PRIu64 " free\n", u, u2);
        if (json_u64(stats, "egress_denials", &u))
                (void) printf("Egress denials:  %" PRIu64 "\n", u);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int verb_stats(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(json_object_putp) json_object *stats = NULL;
        _cleanup_(table_freep) Table *runs = NULL, *latency = NULL, *pool = NULL;
        _cleanup_free_ const char **languages = NULL, **results = NULL;
        size_t n_languages, n_results;
        int r;

        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_get_stats(bus, &stats);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json_or_oom(stats);

        r = stats_names(stats, &languages, &n_languages, &results, &n_results);
        if (r < 0)
                return ctl_oom();
        r = runs_table_new(stats, languages, n_languages, results, n_results, &runs);
        if (r < 0)
                return ctl_oom();
        r = latency_table_new(stats, languages, n_languages, &latency);
        if (r < 0)
                return ctl_oom();
        r = pool_table_new(stats, languages, n_languages, &pool);
        if (r < 0)
                return ctl_oom();
        return print_stats(stats, runs, latency, pool);
}

static int verb_deps_list(const char *language) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(json_object_putp) json_object *deps = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        int r;

        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_list_dependencies(bus, language, &deps);
        if (r != 0)
                return r;
        if (arg_json)
                return print_json_or_oom(deps);

        r = table_new(&t, (const char *const[]){ "NAME", "VERSION", "ORIGIN", NULL });
        if (r < 0)
                return ctl_oom();
        for (size_t i = 0; i < json_object_array_length(deps); i++) {
                json_object *dep = json_object_array_get_idx(deps, i);

                r = table_add(t, json_object_get_string(json_member(dep, "name")));
                if (r >= 0)
                        r = table_add(t, json_object_get_string(json_member(dep, "version")));
                if (r >= 0)
                        r = table_add(t, json_object_get_string(json_member(dep, "origin")));
                if (r < 0)
                        return ctl_oom();
        }
        if (table_print(t, stdout) < 0)
                return -EIO;
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* deps install and deps remove: a job over the packages named, followed like any job. */
static int verb_deps_packages(const char *verb, const char *language, char **packages) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_free_ char *what = NULL;
        const char *member = streq(verb, "remove") ? "RemoveDependencies" : "InstallDependencies";
        int r;

        if (asprintf(&what, "%s %s", verb, language) < 0)
                return ctl_oom();
        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_new_call(bus, member, &call);
        if (r != 0)
                return r;
        r = sd_bus_message_append(call, "s", language);
        if (r >= 0)
                r = sd_bus_message_append_strv(call, packages);
        if (r < 0)
                return bus_report_error(member, r, NULL, true);
        return job_run(bus, call, what, job_output(), arg_no_wait);
}

/* top reads the configuration the runners use (for max_workers, the state directory and the
 * interpreters), as every program but the manager does: --config FILE, else the published one. */
static int verb_top(void) {
        _cleanup_(config_done) Config cfg = { 0 };
        int r;

        r = config_setup(&cfg, arg_config);
        if (r < 0)
                return r;
        return top_run(&cfg, arg_iterations);
}

/* The configuration --if-due reads: FILE of --config alone, else the default file and its drop-ins; then
 * the environment's overrides, as the manager reads it. */
static int refresh_config_load(Config *cfg) {
        _cleanup_(config_error_done) ConfigError err = { 0 };
        int r;

        r = config_init_defaults(cfg);
        if (r < 0)
                return ctl_oom();
        if (arg_config && access(arg_config, F_OK) < 0) {
                r = -errno;
                ctl_error("cannot read the configuration %s: %s", arg_config, strerror(-r));
                return r;
        }
        r = config_load(cfg, arg_config, arg_config ? "" : NULL, environ, &err);
        if (r < 0) {
                if (err.message)
                        ctl_error("invalid configuration: %s", err.message);
                else
                        ctl_error("cannot load the configuration: %s", strerror(-r));
                return r;
        }
        return 0;
}

/* "gen-<N>", the generation the symlink current names, to say which; NULL in *ret when current is not a
 * symlink or cannot be read: it is aged all the same. */
static int current_target(const char *current, const struct stat *st, char **ret) {
        _cleanup_free_ char *target = NULL;

        if (!S_ISLNK(st->st_mode) || st->st_size <= 0 || st->st_size >= 4096) {
                *ret = NULL;
                return 0;
        }
        target = malloc((size_t) st->st_size + 1);
        if (!target)
                return -ENOMEM;
        if (readlink(current, target, (size_t) st->st_size + 1) != st->st_size) {
                *ret = NULL;
                return 0;
        }
        target[st->st_size] = '\0';
        *ret = TAKE_PTR(target);
        return 0;
}

/* Whether the current generation of language is older than python_deps_update_interval (not 0), and a
 * sentence that says so either way. */
static int generation_is_due(const Config *cfg, const char *language, bool *ret_due, char **ret_reason) {
        _cleanup_free_ char *current = NULL, *target = NULL, *reason = NULL;
        char age[FORMAT_TIMESPAN_MAX], interval[FORMAT_TIMESPAN_MAX];
        uint64_t mtime, now_usec;
        struct stat st;
        int r;

        (void) format_timespan(interval, cfg->python_deps_update_interval_usec);
        if (asprintf(&current, "%s/%s/packages/current", cfg->runtime_dir, language) < 0)
                return ctl_oom();
        if (lstat(current, &st) < 0) {
                if (errno != ENOENT) {
                        r = -errno;
                        ctl_error("cannot tell the age of %s: %s", current, strerror(-r));
                        return r;
                }
                if (asprintf(&reason, "there is no current generation (%s)", current) < 0)
                        return ctl_oom();
                *ret_due = true;
                *ret_reason = TAKE_PTR(reason);
                return 0;
        }

        /* the symlink's own mtime: when the generation was switched in */
        mtime = timespec_load(&st.st_mtim);
        now_usec = now(CLOCK_REALTIME);
        (void) format_timespan(age, now_usec > mtime ? now_usec - mtime : 0);
        if (current_target(current, &st, &target) < 0)
                return ctl_oom();
        if (target)
                r = asprintf(&reason,
                             "the current generation (%s) is %s old, python_deps_update_interval is %s",
                             target, age, interval);
        else
                r = asprintf(&reason, "the current generation is %s old, python_deps_update_interval is %s",
                             age, interval);
        if (r < 0)
                return ctl_oom();
        *ret_due = now_usec >= mtime && now_usec - mtime >= cfg->python_deps_update_interval_usec;
        *ret_reason = TAKE_PTR(reason);
        return 0;
}

/* Says why on stdout either way (in JSON when skipping with --json). */
static int print_refresh_decision(const char *language, bool due, const char *reason) {
        int r;

        if (due) {
                if (!arg_json)
                        (void) printf("Refreshing %s: %s.\n", language, reason);
                return 1;
        }
        if (arg_json) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_object_object_add(o, "job", NULL) < 0 ||
                    json_object_object_add(o, "result", json_object_new_string("skipped")) < 0 ||
                    json_object_object_add(o, "reason", json_object_new_string(reason)) < 0)
                        return ctl_oom();
                r = print_json_or_oom(o);
                return r < 0 ? r : 0;
        }
        (void) printf("Not refreshing %s: %s.\n", language, reason);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* --if-due (difysandbox-refresh.timer): is the current generation older than
 * python_deps_update_interval? Says why on stdout either way. Returns 1 when due, 0 when not, or an
 * error. */
static int refresh_is_due(const char *language) {
        _cleanup_(config_done) Config cfg = { 0 };
        _cleanup_free_ char *reason = NULL;
        bool due = false;
        int r;

        r = refresh_config_load(&cfg);
        if (r < 0)
                return r;
        if (cfg.python_deps_update_interval_usec == 0) {
                due = false;
                reason = strdup("python_deps_update_interval is 0: automatic refresh is off");
                if (!reason)
                        return ctl_oom();
        } else {
                r = generation_is_due(&cfg, language, &due, &reason);
                if (r < 0)
                        return r;
        }
        return print_refresh_decision(language, due, reason);
}

static int verb_deps_refresh(const char *language) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_free_ char *what = NULL;
        int r;

        if (arg_if_due) {
                r = refresh_is_due(language);
                if (r <= 0)
                        return r;
        }
        if (asprintf(&what, "refresh %s", language) < 0)
                return ctl_oom();
        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_new_call(bus, "RefreshDependencies", &call);
        if (r != 0)
                return r;
        r = sd_bus_message_append(call, "s", language);
        if (r < 0)
                return bus_report_error("RefreshDependencies", r, NULL, true);
        return job_run(bus, call, what, job_output(), arg_no_wait);
}

static int verb_reload(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = bus_open(&bus);
        if (r != 0)
                return r;
        r = bus_new_call(bus, "ReloadConfig", &call);
        if (r != 0)
                return r;
        return bus_call(bus, call, true, NULL);
}

/* `run FILE --language L`: a snippet through the same sandbox, for debugging (DESIGN §4). The sandbox is
 * difysandbox(8)'s; this only hands over, so both always behave the same. */
static int verb_run(const char *file) {
        char *argv[] = { (char *) BINDIR "/difysandbox", NULL,          NULL, "run", "--language",
                         (char *) arg_language,          (char *) file, NULL };
        char **a = argv;

        if (arg_config) {
                argv[1] = "--config";
                argv[2] = (char *) arg_config;
        } else {
                argv[2] = argv[0];
                a = argv + 2;
        }
        (void) execv(argv[0], a);
        (void) fprintf(stderr, CTL_PROGRAM ": cannot run %s: %s\n", argv[0], strerror(errno));
        return CTL_EXIT_FAILURE;
}

/* Checks the whole command line before anything is sent, then runs the command. */
static int run(int n, char **args) {
        const char *command, *sub;
        int r;

        if (n == 0)
                return usage_error("missing command");
        command = args[0];

        if (arg_no_wait &&
            !(streq(command, "deps") && n >= 2 &&
              (streq(args[1], "install") || streq(args[1], "remove") || streq(args[1], "refresh"))))
                return usage_error(
                        "--no-wait applies to 'deps install', 'deps remove' and 'deps refresh' only");
        if (arg_if_due && !(streq(command, "deps") && n >= 2 && streq(args[1], "refresh")))
                return usage_error("--if-due applies to 'deps refresh' only");

        if (arg_language && !streq(command, "run"))
                return usage_error("--language applies to 'run' only");
        if (streq(command, "run")) {
                if (n != 2)
                        return usage_error("'run' needs one FILE (- for standard input)");
                if (!arg_language)
                        return usage_error("'run' needs --language " RUNTIME_LANGUAGE_NAMES);
                r = check_language(arg_language);
                if (r != 0)
                        return r;
                return verb_run(args[1]);
        }
        if (arg_iterations != 0 && !streq(command, "top"))
                return usage_error("--iterations applies to 'top' only");
        if (streq(command, "top")) {
                if (n > 1)
                        return usage_error("'top' takes no arguments, got '%s'", args[1]);
                return verb_top();
        }
        if (streq(command, "status") || streq(command, "stats") || streq(command, "reload")) {
                if (n > 1)
                        return usage_error("'%s' takes no arguments, got '%s'", command, args[1]);
                return streq(command, "status")  ? verb_status()
                       : streq(command, "stats") ? verb_stats()
                                                 : verb_reload();
        }
        if (!streq(command, "deps"))
                return usage_error("unknown command '%s'", command);

        if (n < 2)
                return usage_error("missing deps command: expected list, install, remove or refresh");
        sub = args[1];
        if (streq(sub, "list") || streq(sub, "refresh")) {
                if (n < 3)
                        return usage_error("'deps %s' needs a LANGUAGE (" RUNTIME_LANGUAGE_NAMES ")", sub);
                if (n > 3)
                        return usage_error("'deps %s' takes one LANGUAGE, got also '%s'", sub, args[3]);
                if (check_language(args[2]) != 0)
                        return CTL_EXIT_USAGE;
                return streq(sub, "list") ? verb_deps_list(args[2]) : verb_deps_refresh(args[2]);
        }
        if (streq(sub, "install") || streq(sub, "remove")) {
                if (n < 3)
                        return usage_error(
                                "'deps %s' needs a LANGUAGE (" RUNTIME_LANGUAGE_NAMES ") and packages", sub);
                if (check_language(args[2]) != 0)
                        return CTL_EXIT_USAGE;
                if (n < 4)
                        return usage_error("'deps %s' needs at least one PACKAGE", sub);
                for (int i = 3; i < n; i++)
                        if (args[i][0] == '\0')
                                return usage_error("empty PACKAGE");
                return verb_deps_packages(sub, args[2], args + 3);
        }
        return usage_error("unknown deps command '%s': expected list, install, remove or refresh", sub);
}

int main(int argc, char **argv) {
        enum {
                ARG_VERSION = 0x100,
                ARG_JSON,
                ARG_NO_WAIT,
                ARG_IF_DUE,
                ARG_CONFIG,
                ARG_LANGUAGE,
        };
        uint32_t u32;
        /* clang-format off */
        static const struct option options[] = {
                { "help",    no_argument,       NULL, 'h'         },
                { "version", no_argument,       NULL, ARG_VERSION },
                { "json",    no_argument,       NULL, ARG_JSON    },
                { "no-wait", no_argument,       NULL, ARG_NO_WAIT },
                { "if-due",  no_argument,       NULL, ARG_IF_DUE  },
                { "config",  required_argument, NULL, ARG_CONFIG  },
                { "language", required_argument, NULL, ARG_LANGUAGE },
                { "iterations", required_argument, NULL, 'n' },
                {},
        };
        /* clang-format on */
        int c, r;

        (void) setlocale(LC_CTYPE, ""); /* the progress bar measures text in terminal cells */

        opterr = 0; /* our own messages: getopt's would name argv[0], a path */
        while ((c = getopt_long(argc, argv, ":hn:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return CTL_EXIT_SUCCESS;
                case ARG_VERSION:
                        (void) printf(CTL_PROGRAM " " VERSION "\n");
                        return CTL_EXIT_SUCCESS;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_NO_WAIT:
                        arg_no_wait = true;
                        break;
                case ARG_IF_DUE:
                        arg_if_due = true;
                        break;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ARG_LANGUAGE:
                        arg_language = optarg;
                        break;
                case 'n':
                        if (parse_uint32(optarg, &u32) < 0 || u32 == 0)
                                return usage_error("--iterations: '%s' is not a number from 1", optarg);
                        arg_iterations = u32;
                        break;
                case ':':
                        return usage_error("option '%s' needs an argument", argv[optind - 1]);
                default:
                        if (optopt != 0)
                                return usage_error("unknown option '-%c'", optopt);
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }

        r = run(argc - optind, argv + optind);
        return r < 0 ? CTL_EXIT_FAILURE : r;
}
