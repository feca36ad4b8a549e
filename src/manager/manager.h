#pragma once
/* manager: the state of difysandbox-manager (DESIGN §4), shared by its parts:
 *   manager-main.c    start-up, the event loop, signals, sd_notify
 *   manager-bus.c     the org.difysandbox.Sandbox1.Manager object: methods, properties, signals
 *   manager-stats.c   GetStats and the run-related properties, from the workers' shared state
 *   config-publish.c  ReloadConfig: validate, publish for the workers, keep the old one on failure
 *   config-watch.c    whether the files on disk differ from the configuration in force
 *   job.c             dependency jobs: the installer in a transient unit, and its job object
 *   metrics.c         the Prometheus endpoint on difysandbox-metrics.socket; metrics-format.c its text
 * Nothing here is needed by a run: the workers serve while the manager is stopped. */

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "common/config.h"
#include "common/stats.h"

#define MANAGER_BUS_NAME "org.difysandbox.Sandbox1"
#define MANAGER_OBJECT_PATH "/org/difysandbox/Sandbox1"
#define MANAGER_INTERFACE "org.difysandbox.Sandbox1.Manager"
#define JOB_INTERFACE "org.difysandbox.Sandbox1.Job"
#define JOB_PATH_PREFIX "/org/difysandbox/Sandbox1/job"

#define MANAGER_ERROR_JOB_RUNNING "org.difysandbox.Sandbox1.Error.JobRunning"
#define MANAGER_ERROR_CONFIG_INVALID "org.difysandbox.Sandbox1.Error.ConfigInvalid"
#define MANAGER_ERROR_FAILED "org.difysandbox.Sandbox1.Error.Failed"

typedef struct Job Job;
typedef struct Metrics Metrics;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        Config cfg;           /* the configuration in force: the one last published */
        Stats *stats;         /* the workers' shared state, in cfg.state_dir; NULL if it cannot be opened */
        Job *jobs;            /* running dependency jobs, at most one per language */
        uint32_t next_job_id; /* the last job ID handed out (job.c); 0 until read back at the first job */
        uint64_t started_realtime_usec, started_monotonic_usec;
        uint64_t config_loaded_realtime_usec;
        bool reloading;
        sd_event_source *config_dir_watch, *config_dropin_watch; /* inotify, config-watch.c */
        bool config_status_changed;                              /* STATUS= says the files changed on disk */
        Metrics *metrics; /* metrics.c; NULL without difysandbox-metrics.socket */
} Manager;

/* manager-bus.c */
int manager_bus_register(Manager *m);
/* 0 when language names one we run, else InvalidArgs with the names we accept. */
int manager_language_check(const char *language, sd_bus_error *error);
/* Sets MANAGER_ERROR_FAILED, the name the interface documents for what the manager could not do, with a
 * message in which %m says error (a negative errno), as sd_bus_error_set_errnof() formats it; that one
 * would name the error after the errno, and a server-side EACCES or EINVAL would read as the caller's
 * mistake (AccessDenied, InvalidArgs). Returns a negative errno, for the method handler to return. */
int manager_error_set_failedf(sd_bus_error *reterr, int error, const char *format, ...)
        __attribute__((format(printf, 3, 4)));
int manager_emit_dependencies_changed(Manager *m, const char *language, uint64_t generation);

/* config-publish.c: where the workers find the configuration the manager accepted. */
int manager_config_start(Manager *m);                        /* at start-up */
int manager_config_reload(Manager *m, sd_bus_error *reterr); /* ReloadConfig and SIGHUP */

/* config-watch.c: STATUS= and GetStats say when the files on disk differ from m->cfg. */
int manager_config_watch(Manager *m);
void manager_config_watch_done(Manager *m);
int manager_config_changed_on_disk(Manager *m); /* 1 differ, 0 same, < 0 error */

/* manager-stats.c */
int manager_append_stats(Manager *m, sd_bus_message *reply);
int manager_uid_pool_free(Manager *m, uint32_t *ret);

/* job.c */
int job_start(Manager *m, const char *language, const char *kind, char **packages, const char **ret_path,
              sd_bus_error *reterr);
int job_register_vtable(Manager *m);
int manager_append_jobs(Manager *m, sd_bus_message *reply);
void jobs_free(Manager *m);
