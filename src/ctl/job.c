/* job: see job.h. */

#include "job.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "common/cleanup.h"
#include "common/time-util.h"
#include "ctl/bus.h"
#include "ctl/ctl.h"
#include "ctl/format.h"

#define LOG_TAIL_LINES 20
#define REDRAW_USEC (1000 * 1000)        /* the elapsed time on the bar moves on by itself */
#define END_GRACE_USEC (5 * 1000 * 1000) /* State says it ended: wait this long for JobRemoved */

typedef struct JobFollow {
        sd_event *event;
        JobOutput output;
        const char *what;
        char *path; /* NULL until the method returned */
        char *state;
        double progress;     /* < 0 until known */
        char *log;           /* the newest Log: all output so far */
        size_t log_printed;  /* LINES: bytes of log already printed */
        int percent_printed; /* LINES: -1 before the first */
        bool bar_shown;
        char *result;      /* JobRemoved's, or State's after END_GRACE_USEC; NULL while running */
        bool manager_gone; /* the manager left the bus */
        int signal;        /* SIGINT or SIGTERM stopped us */
        uint64_t start_usec;
        sd_event_source *grace, *sigint, *sigterm, *redraw;
} JobFollow;

static void job_follow_done(JobFollow *f) {
        f->grace = sd_event_source_unref(f->grace);
        f->sigint = sd_event_source_unref(f->sigint);
        f->sigterm = sd_event_source_unref(f->sigterm);
        f->redraw = sd_event_source_unref(f->redraw);
        f->event = sd_event_unref(f->event);
        free(f->path);
        free(f->state);
        free(f->log);
        free(f->result);
}

static bool state_is_final(const char *state) {
        return state && (streq(state, "done") || streq(state, "failed"));
}

static void job_stop(JobFollow *f) {
        if (f->event)
                (void) sd_event_exit(f->event, 0);
}

/* Log is all output so far, so a newer value extends an older one. An older value can still arrive
 * after a newer one (GetAll is answered before the signals queued ahead of its reply are dispatched):
 * it is ignored. A log the manager shortened at its head is followed from the last line printed. */
static int job_take_log(JobFollow *f, char *log) {
        size_t n = strlen(log), old = f->log ? strlen(f->log) : 0;

        if (f->log && n <= old && strncmp(f->log, log, n) == 0) {
                free(log);
                return 0;
        }
        if (f->log && f->log_printed > 0 &&
            !(n >= f->log_printed && memcmp(log, f->log, f->log_printed) == 0)) {
                /* find the last printed line in the new text, else start over */
                size_t start = f->log_printed - 1;
                const char *hit = NULL, *p = log;

                while (start > 0 && f->log[start - 1] != '\n')
                        start--;
                for (;;) {
                        const char *q =
                                memmem(p, n - (size_t) (p - log), f->log + start, f->log_printed - start);
                        if (!q)
                                break;
                        hit = q;
                        p = q + 1;
                }
                f->log_printed = hit ? (size_t) (hit - log) + (f->log_printed - start) : 0;
        }
        free(f->log);
        f->log = log;
        return 0;
}

static void job_print_lines(JobFollow *f, bool all) {
        size_t len = f->log ? strlen(f->log) : 0, end = len;

        if (!all)
                while (end > f->log_printed && f->log[end - 1] != '\n')
                        end--;
        if (end > f->log_printed) {
                (void) fwrite(f->log + f->log_printed, 1, end - f->log_printed, stdout);
                if (f->log[end - 1] != '\n')
                        (void) fputc('\n', stdout);
                f->log_printed = end;
        }
}

static void job_draw_bar(JobFollow *f) {
        _cleanup_free_ char *line = NULL;
        const char *last;
        size_t last_len = 0;

        last = format_last_line(f->log, f->log ? strlen(f->log) : 0, &last_len);
        if (format_progress_line(f->progress < 0 ? 0.0 : f->progress, last, last_len,
                                 now(CLOCK_MONOTONIC) - f->start_usec, format_columns(STDOUT_FILENO),
                                 &line) < 0)
                return; /* out of memory: the next redraw tries again */
        (void) printf("\r%s\x1b[K", line);
        (void) fflush(stdout);
        f->bar_shown = true;
}

static void job_show(JobFollow *f) {
        switch (f->output) {
        case JOB_OUTPUT_LINES:
                job_print_lines(f, false);
                if (f->progress >= 0 && (int) (f->progress * 100.0) != f->percent_printed) {
                        f->percent_printed = (int) (f->progress * 100.0);
                        (void) printf("progress %i%%\n", f->percent_printed);
                }
                (void) fflush(stdout);
                break;
        case JOB_OUTPUT_BAR:
                job_draw_bar(f);
                break;
        case JOB_OUTPUT_JSON:
                break;
        }
}

static int on_grace(sd_event_source *s, uint64_t usec, void *userdata) {
        JobFollow *f = userdata;

        if (!f->result) {
                f->result = strdup(f->state);
                if (!f->result)
                        return -ENOMEM;
        }
        job_stop(f);
        return 0;
}

/* JobRemoved is what ends a job; should it never come, State's final value does after a while. */
static void job_arm_grace(JobFollow *f) {
        if (!f->event || f->grace || !state_is_final(f->state))
                return;
        (void) sd_event_add_time_relative(f->event, &f->grace, CLOCK_MONOTONIC, END_GRACE_USEC, 0, on_grace,
                                          f);
}

static void job_apply(JobFollow *f, JobProperties *p) {
        if (p->log)
                (void) job_take_log(f, TAKE_PTR(p->log));
        if (p->has_progress && p->progress > f->progress) /* older values may come late: never go back */
                f->progress = p->progress > 1.0 ? 1.0 : p->progress;
        if (p->state && !state_is_final(f->state)) {
                free(f->state);
                f->state = TAKE_PTR(p->state);
        }
        job_show(f);
        job_arm_grace(f);
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(job_properties_done) JobProperties p = { 0 };
        JobFollow *f = userdata;
        const char *interface;

        if (!f->path || !sd_bus_message_get_path(m) || !streq(sd_bus_message_get_path(m), f->path))
                return 0;
        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, JOB_INTERFACE))
                return 0;
        if (bus_read_job_properties(m, &p) < 0)
                return 0; /* a malformed signal: the next one or JobRemoved tells */
        job_apply(f, &p);
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        JobFollow *f = userdata;
        const char *path, *result;

        if (sd_bus_message_read(m, "os", &path, &result) < 0)
                return 0;
        if (!f->path || !streq(path, f->path) || f->result)
                return 0;
        f->result = strdup(result);
        if (!f->result)
                return -ENOMEM;
        job_stop(f);
        return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        JobFollow *f = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (streq(name, MANAGER_BUS_NAME) && *old_owner != '\0') {
                f->manager_gone = true;
                job_stop(f);
        }
        return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        JobFollow *f = userdata;

        f->signal = (int) si->ssi_signo;
        job_stop(f);
        return 0;
}

static int on_redraw(sd_event_source *s, uint64_t usec, void *userdata) {
        job_draw_bar(userdata);
        return sd_event_source_set_time_relative(s, REDRAW_USEC);
}

static int job_subscribe(sd_bus *bus, JobFollow *f, sd_bus_slot **ret_removed, sd_bus_slot **ret_changed,
                         sd_bus_slot **ret_owner) {
        int r;

        r = sd_bus_match_signal(bus, ret_removed, MANAGER_BUS_NAME, MANAGER_OBJECT_PATH, MANAGER_INTERFACE,
                                "JobRemoved", on_job_removed, f);
        if (r < 0)
                return r;
        r = sd_bus_add_match(bus, ret_changed,
                             "type='signal',sender='" MANAGER_BUS_NAME "',path_namespace='" JOB_PATH_PREFIX
                             "',"
                             "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                             "arg0='" JOB_INTERFACE "'",
                             on_properties_changed, f);
        if (r < 0)
                return r;
        return sd_bus_add_match(bus, ret_owner,
                                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                "arg0='" MANAGER_BUS_NAME "'",
                                on_name_owner_changed, f);
}

/* The last LOG_TAIL_LINES lines of the log, to stderr, after the failure line. */
static void job_print_tail(const JobFollow *f) {
        size_t len = f->log ? strlen(f->log) : 0, start = len;
        unsigned lines = 0;

        while (len > 0 && f->log[len - 1] == '\n')
                len--;
        if (len == 0) {
                ctl_error("job %s (%s) %s; its log is empty", f->path, f->what, f->result);
                return;
        }
        start = len;
        while (start > 0 && lines < LOG_TAIL_LINES) {
                start--;
                while (start > 0 && f->log[start - 1] != '\n')
                        start--;
                lines++;
        }
        ctl_error("job %s (%s) %s; the last %u line%s of its log:", f->path, f->what, f->result, lines,
                  lines == 1 ? "" : "s");
        (void) fwrite(f->log + start, 1, len - start, stderr);
        (void) fputc('\n', stderr);
}

static int job_finish(JobFollow *f) {
        char elapsed[FORMAT_TIMESPAN_MAX];
        bool done = streq(f->result, "done");

        if (f->output == JOB_OUTPUT_JSON) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                if (!o || json_object_object_add(o, "job", json_object_new_string(f->path)) < 0 ||
                    json_object_object_add(o, "result", json_object_new_string(f->result)) < 0 ||
                    json_object_object_add(o, "log",
                                           format_json_string(f->log, f->log ? strlen(f->log) : 0)) < 0)
                        return ctl_oom();
                if (format_json_print(o) < 0) {
                        ctl_error("cannot print the result: %s", strerror(EIO));
                        return -EIO;
                }
        } else {
                if (f->output == JOB_OUTPUT_BAR && f->bar_shown)
                        (void) fputs("\r\x1b[K", stdout);
                if (f->output == JOB_OUTPUT_LINES)
                        job_print_lines(f, true);
                (void) printf("Job %s (%s) %s after %s.\n", f->path, f->what, f->result,
                              format_timespan(elapsed, now(CLOCK_MONOTONIC) - f->start_usec));
                (void) fflush(stdout);
        }
        if (!done)
                job_print_tail(f);
        return done ? 0 : CTL_EXIT_FAILURE;
}

/* The event loop of a follow: SIGINT and SIGTERM stop following (the job keeps running), the bar is
 * redrawn every second, and the bus is dispatched from it. */
static int job_event_setup(JobFollow *f) {
        sigset_t mask;
        int r;

        r = sd_event_new(&f->event);
        if (r < 0)
                return r;
        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGINT) < 0 || sigaddset(&mask, SIGTERM) < 0 ||
            sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        r = sd_event_add_signal(f->event, &f->sigint, SIGINT, on_signal, f);
        if (r < 0)
                return r;
        r = sd_event_add_signal(f->event, &f->sigterm, SIGTERM, on_signal, f);
        if (r < 0)
                return r;
        if (f->output == JOB_OUTPUT_BAR) {
                r = sd_event_add_time_relative(f->event, &f->redraw, CLOCK_MONOTONIC, REDRAW_USEC, 0,
                                               on_redraw, f);
                if (r < 0)
                        return r;
                r = sd_event_source_set_enabled(f->redraw, SD_EVENT_ON);
                if (r < 0)
                        return r;
        }
        job_arm_grace(f);
        return 0;
}

static bool job_stopped(const JobFollow *f) {
        return f->result || f->manager_gone || f->signal != 0;
}

static int job_wait(sd_bus *bus, JobFollow *f) {
        int r;

        /* Dispatch what is queued already, then wait for the rest. */
        do {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
        } while (r > 0 && !job_stopped(f));
        if (job_stopped(f))
                return 0;

        r = sd_bus_attach_event(bus, f->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        r = sd_bus_set_exit_on_disconnect(bus, true); /* then !job_stopped(): the connection is gone */
        if (r >= 0)
                r = sd_event_loop(f->event);
        (void) sd_bus_detach_event(bus);
        return r < 0 ? r : 0;
}

static int job_follow(sd_bus *bus, JobFollow *f) {
        _cleanup_(job_properties_done) JobProperties p = { 0 };
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        /* The job may have moved on before we knew its path; its signals since are queued, and this is
         * where it stands (an error: it is gone already, and JobRemoved is queued too). */
        r = sd_bus_call_method(bus, MANAGER_BUS_NAME, f->path, "org.freedesktop.DBus.Properties", "GetAll",
                               NULL, &reply, "s", JOB_INTERFACE);
        if (r >= 0 && bus_read_job_properties(reply, &p) >= 0)
                job_apply(f, &p);
        else
                job_show(f);

        r = job_event_setup(f);
        if (r < 0) {
                ctl_error("cannot follow job %s (%s): %s", f->path, f->what, strerror(-r));
                return r;
        }
        r = job_wait(bus, f);
        if (f->output == JOB_OUTPUT_BAR && f->bar_shown && !f->result)
                (void) fputs("\r\x1b[K", stdout);
        if (r < 0 && r != -ECONNRESET && r != -ENOTCONN) {
                ctl_error("cannot follow job %s (%s): %s", f->path, f->what, strerror(-r));
                return r;
        }

        if (f->result)
                return job_finish(f);
        if (f->signal != 0) {
                ctl_error("stopped following job %s (%s); it keeps running (see difysandboxctl status)",
                          f->path, f->what);
                return 128 + f->signal;
        }
        if (f->manager_gone)
                ctl_error(
                        "the difysandbox manager left the bus while job %s (%s) was running; its result is "
                        "unknown. (systemctl status difysandbox-manager)",
                        f->path, f->what);
        else
                ctl_error("lost the connection to the system bus while following job %s (%s); its result is "
                          "unknown",
                          f->path, f->what);
        return CTL_EXIT_UNREACHABLE;
}

int job_run(sd_bus *bus, sd_bus_message *call, const char *what, JobOutput output, bool no_wait) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *removed = NULL, *changed = NULL, *owner = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(job_follow_done) JobFollow f = {
                .output = output,
                .what = what,
                .progress = -1.0,
                .percent_printed = -1,
                .start_usec = now(CLOCK_MONOTONIC),
        };
        const char *path;
        int r;

        /* Subscribe before the call, so that not even a job that ends at once is missed. */
        if (!no_wait) {
                r = job_subscribe(bus, &f, &removed, &changed, &owner);
                if (r < 0)
                        return bus_report_error("AddMatch", r, NULL, false);
        }

        r = bus_call(bus, call, true, &reply);
        if (r != 0)
                return r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0) {
                ctl_error("cannot read the manager's reply to %s: %s (a manager of another version?)",
                          sd_bus_message_get_member(call), strerror(-r));
                return r;
        }
        f.path = strdup(path);
        if (!f.path)
                return ctl_oom();

        if (no_wait) {
                if (output == JOB_OUTPUT_JSON) {
                        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

                        if (!o || json_object_object_add(o, "job", json_object_new_string(path)) < 0)
                                return ctl_oom();
                        return format_json_print(o);
                }
                (void) puts(path);
                return fflush(stdout) == 0 ? 0 : -EIO;
        }

        if (output != JOB_OUTPUT_JSON) {
                (void) printf("Started job %s (%s).\n", f.path, what);
                (void) fflush(stdout);
        }
        return job_follow(bus, &f);
}
