/* manager-client: see manager-client.h. */

#include "manager-client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "common/cleanup.h"
#include "common/time-util.h"

#define BUS_NAME "org.difysandbox.Sandbox1"
#define OBJECT_PATH "/org/difysandbox/Sandbox1"
#define INTERFACE "org.difysandbox.Sandbox1.Manager"
#define JOB_INTERFACE "org.difysandbox.Sandbox1.Job"

typedef struct Wait {
        const char *job; /* NULL until the call returned */
        char result[16];
        bool removed;
        char pending_job[128]; /* a JobRemoved that came before the reply, in case it is ours */
        char pending_result[16];
} Wait;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Wait *w = userdata;
        const char *job, *result;

        if (sd_bus_message_read(m, "os", &job, &result) < 0)
                return 0;
        if (!w->job) {
                (void) snprintf(w->pending_job, sizeof(w->pending_job), "%s", job);
                (void) snprintf(w->pending_result, sizeof(w->pending_result), "%s", result);
                return 0;
        }
        if (strcmp(job, w->job) == 0) {
                (void) snprintf(w->result, sizeof(w->result), "%s", result);
                w->removed = true;
        }
        return 0;
}

/* The last non-empty line of the job's Log, read while the job object still exists. */
static void read_last_log_line(sd_bus *bus, const char *job, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *log = NULL;
        char *end, *start;

        if (sd_bus_get_property_string(bus, BUS_NAME, job, JOB_INTERFACE, "Log", &error, &log) < 0 || !log)
                return;
        end = log + strlen(log);
        while (end > log && (end[-1] == '\n' || end[-1] == ' '))
                *--end = '\0';
        start = strrchr(log, '\n');
        start = start ? start + 1 : log;
        if (*start)
                free(*ret), *ret = strdup(start);
}

int manager_refresh_dependencies(const char *language, uint64_t timeout_usec, char **ret_error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *last_line = NULL;
        Wait w = { 0 };
        uint64_t deadline = now(CLOCK_MONOTONIC) + timeout_usec;
        const char *job;
        int r;

        *ret_error = NULL;
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                (void) asprintf(ret_error, "cannot reach the difysandbox manager: no system bus (%s)",
                                strerror(-r));
                return -EHOSTUNREACH;
        }
        /* Subscribed before the call, so that a quick job's end is not missed. */
        r = sd_bus_match_signal(bus, &slot, BUS_NAME, OBJECT_PATH, INTERFACE, "JobRemoved", on_job_removed,
                                &w);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, OBJECT_PATH, INTERFACE, "RefreshDependencies", &error, &reply,
                               "s", language);
        if (r < 0) {
                bool unreachable = sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                                          SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                                          SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT);

                (void) asprintf(ret_error, "%s the difysandbox manager: %s%s",
                                unreachable ? "cannot reach" : "refused by",
                                error.message ? error.message : strerror(-r),
                                unreachable ? " (is difysandbox-manager.service running?)" : "");
                return unreachable ? -EHOSTUNREACH : -EPROTO;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return r;
        w.job = job;
        if (strcmp(w.pending_job, job) == 0) {
                (void) snprintf(w.result, sizeof(w.result), "%s", w.pending_result);
                w.removed = true;
        }

        /* Keeps the newest log line while the job exists: it says why a failed job failed. */
        read_last_log_line(bus, job, &last_line);
        while (!w.removed) {
                uint64_t now_usec = now(CLOCK_MONOTONIC);

                if (now_usec >= deadline) {
                        (void) asprintf(ret_error, "dependency job %s did not finish within %" PRIu64 " s",
                                        job, timeout_usec / 1000000U);
                        return -ETIMEDOUT;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, deadline - now_usec < 1000000U ? deadline - now_usec : 1000000U);
                if (r < 0)
                        return r;
                read_last_log_line(bus, job, &last_line);
        }
        if (strcmp(w.result, "done") != 0) {
                (void) asprintf(ret_error, "dependency job %s %s: %s", job, w.result,
                                last_line ? last_line : "see journalctl -u difysandbox-manager");
                return -EPROTO;
        }
        return 0;
}
