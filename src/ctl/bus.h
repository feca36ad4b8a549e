#pragma once
/* bus: difysandboxctl's side of org.difysandbox.Sandbox1 (DESIGN §4; dbus/org.difysandbox.Sandbox1.xml is
 * the contract): the system bus connection, the calls, their replies as json-c objects, and how a
 * failure reads. Logging: every function here prints its own failure, once, as one line on stderr, and
 * returns a negative errno (exit status 1) or CTL_EXIT_UNREACHABLE / CTL_EXIT_DENIED (ctl.h). */

#include <stdbool.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/* Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket). */
int bus_open(sd_bus **ret);

/* Prints why a call failed and returns what the command should return. r is the call's negative
 * errno; error its D-Bus error, if any. change says the call changes something (needs root). */
int bus_report_error(const char *member, int r, const sd_bus_error *error, bool change);

/* A method call on the manager object, for the caller to append arguments to. */
int bus_new_call(sd_bus *bus, const char *member, sd_bus_message **ret);

/* Sends call and waits for its reply; a failure is reported as bus_report_error() says. */
int bus_call(sd_bus *bus, sd_bus_message *call, bool change, sd_bus_message **ret_reply);

/* GetStats as {"runs_by_result": {...}, "runs_by_language": {...}, "pool_by_language": {LANGUAGE:
 * {"hits", "misses"}}, "latency": {LANGUAGE: {"samples", "p50_usec", "p95_usec", "p99_usec"}},
 * "active_runs", "uid_pool_free", "uid_pool_size",
 * "egress_denials", "uptime_usec", "stats_since_usec", "config_loaded_at_usec",
 * "dependency_generations": {...}}: the keys the manager sent, in snake case; keys or types this
 * version does not know are left out. */
int bus_get_stats(sd_bus *bus, json_object **ret);

/* The Version property. */
int bus_get_version(sd_bus *bus, char **ret);

/* ListJobs as [{"job", "language", "kind", "state", "progress"}]; state and progress are read from
 * each job, and left out for a job that ended meanwhile. */
int bus_list_jobs(sd_bus *bus, json_object **ret);

/* ListDependenciesEx as [{"name", "version", "origin"}], sorted by name. */
int bus_list_dependencies(sd_bus *bus, const char *language, json_object **ret);

/* The properties of a job object that difysandboxctl follows. */
typedef struct JobProperties {
        char *state; /* "running", "done", "failed"; NULL when not sent */
        double progress;
        bool has_progress;
        char *log; /* all output so far; NULL when not sent */
} JobProperties;

void job_properties_done(JobProperties *p);

/* Reads the a{sv} of a GetAll reply or a PropertiesChanged signal of a job. Non-logging: returns 0 or
 * the negative errno of a malformed message; properties it does not know are skipped. */
int bus_read_job_properties(sd_bus_message *m, JobProperties *ret);
