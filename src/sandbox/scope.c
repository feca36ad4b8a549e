/* scope: see scope.h. */

#include "scope.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "cgroup.h"
#include "common/cleanup.h"
#include "common/time-util.h"

struct ScopeManager {
        sd_bus *bus;
};

typedef struct JobWait {
        const char *job; /* object path of the job we wait for */
        bool done;
        char *result;
} JobWait;

ScopeManager *scope_manager_free(ScopeManager *m) {
        if (m) {
                sd_bus_flush_close_unref(m->bus);
                free(m);
        }
        return NULL;
}

int scope_manager_open(ScopeManager **ret) {
        ScopeManager *m;
        int r;

        if (sd_booted() <= 0)
                return -ENOMEDIUM;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        r = sd_bus_open_system(&m->bus);
        if (r < 0) {
                scope_manager_free(m);
                return r;
        }
        /* No Subscribe(): systemd sends a job's JobRemoved to the client that asked for the job even when
         * nobody subscribed (the job tracks its requester, bus_job_track_sender()). A subscription would
         * cost each run a call to PID 1 and PID 1's tracking of one more client on the bus. */
        *ret = m;
        return 0;
}

static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        JobWait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &path, &unit, &result) < 0)
                return 0; /* not ours to judge; keep waiting */
        if (!w->job || strcmp(path, w->job) != 0)
                return 0;
        w->done = true;
        w->result = strdup(result);
        return 0;
}

static int append_properties(sd_bus_message *m, const char *description, const char *slice, pid_t pid,
                             const CgroupLimits *limits) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(
                m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", description, "Slice", "s", slice,
                "PIDs", "au", 1, (uint32_t) pid, "MemoryMax", "t", limits->memory_max, "MemorySwapMax", "t",
                (uint64_t) 0, "CPUQuotaPerSecUSec", "t", (uint64_t) limits->cpu_quota_percent * 10000ULL,
                "TasksMax", "t", (uint64_t) limits->tasks_max, "CollectMode", "s", "inactive-or-failed");
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int scope_start(ScopeManager *m, const char *unit, const char *description, const char *slice, pid_t pid,
                const CgroupLimits *limits, uint64_t timeout_usec, char **reterr_detail) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        JobWait wait = { 0 };
        const char *job;
        uint64_t deadline;
        int r;

        /* Match before the call, so that a job finishing at once is not missed. The bus handles one
         * connection's messages in order, so the AddMatch needs no round trip of its own before the call;
         * if the bus refuses it, sd-bus closes the connection and the wait below fails. */
        r = sd_bus_match_signal_async(m->bus, &slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                      "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, NULL,
                                      &wait);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_call(m->bus, &call, "org.freedesktop.systemd1",
                                           "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "ss", unit, "fail");
        if (r < 0)
                return r;
        r = append_properties(call, description, slice, pid, limits);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "a(sa(sv))", 0); /* no auxiliary units */
        if (r < 0)
                return r;

        r = sd_bus_call(m->bus, call, timeout_usec, &error, &reply);
        if (r < 0) {
                /* systemd says why (a masked slice, a unit that exists): the errno alone would not */
                if (sd_bus_error_is_set(&error) &&
                    asprintf(reterr_detail, "%s: %s", unit, error.message ? error.message : error.name) < 0)
                        *reterr_detail = NULL;
                return r;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return r;
        wait.job = job;

        deadline = now(CLOCK_MONOTONIC) + timeout_usec;
        while (!wait.done) {
                uint64_t now_usec = now(CLOCK_MONOTONIC);
                if (now_usec >= deadline)
                        return -ETIMEDOUT;
                r = sd_bus_process(m->bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(m->bus, deadline - now_usec);
                if (r < 0)
                        return r;
        }

        r = strcmp(wait.result ? wait.result : "", "done") == 0 ? 0 : -EIO;
        free(wait.result);
        return r;
}
