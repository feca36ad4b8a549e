/* difysandbox-manager: the D-Bus control plane (DESIGN §4), started by difysandbox-manager.service
 * (Type=dbus) or by D-Bus activation. It owns org.difysandbox.Sandbox1 on the system bus, reloads the
 * configuration on ReloadConfig and SIGHUP, and speaks sd_notify: STATUS, RELOADING, WATCHDOG. READY
 * is implied by the bus name for Type=dbus, and sent anyway for Type=notify use. */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "manager.h"
#include "metrics.h"

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = userdata;
        int r;

        r = manager_config_reload(m, &error);
        if (r < 0 && !sd_bus_error_is_set(&error))
                log_error_errno(r, "Cannot reload the configuration: %m");
        return 0;
}

static void manager_done(Manager *m) {
        m->metrics = metrics_free(m->metrics);
        jobs_free(m);
        manager_config_watch_done(m);
        m->bus = sd_bus_flush_close_unref(m->bus);
        m->event = sd_event_unref(m->event);
        stats_close(m->stats);
        config_done(&m->cfg);
}

static void help(void) {
        printf("Usage: difysandbox-manager [--help] [--version]\n"
               "\n"
               "The difysandbox control plane on the system bus (org.difysandbox.Sandbox1):\n"
               "dependencies, configuration reload and stats. Started by difysandbox-manager.service;\n"
               "administered with difysandboxctl(1). See difysandbox-manager(8).\n"
               "\n"
               "  -h --help     Show this help\n"
               "     --version  Show the version\n");
}

/* SIGTERM and SIGINT end the loop, SIGHUP reloads; the watchdog when the unit asks for one. */
static int event_setup(Manager *m) {
        sigset_t mask;
        int r;

        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGHUP) < 0 || sigaddset(&mask, SIGTERM) < 0 ||
            sigaddset(&mask, SIGINT) < 0 || sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Cannot block signals: %m");
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch signals: %m");
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Cannot set up the watchdog: %m");
        return 0;
}

/* Our objects on the system bus, served from the event loop, under our well-known name. */
static int bus_setup(Manager *m) {
        int r;

        r = sd_bus_open_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        r = manager_bus_register(m);
        if (r < 0)
                return log_error_errno(r, "Cannot register the D-Bus objects: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop: %m");
        r = sd_bus_request_name(m->bus, MANAGER_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r,
                                       "Cannot own %s on the system bus (is another manager running, and is "
                                       "the bus policy installed?): %m",
                                       MANAGER_BUS_NAME);
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        _cleanup_(manager_done) Manager m = { .next_job_id = 0 };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case 'V':
                        printf("difysandbox-manager %s\n", VERSION);
                        return EXIT_SUCCESS;
                default:
                        return 2;
                }
        if (optind < argc) {
                log_error("Unexpected argument '%s'", argv[optind]);
                return 2;
        }

        m.started_realtime_usec = now(CLOCK_REALTIME);
        m.started_monotonic_usec = now(CLOCK_MONOTONIC);

        r = manager_config_start(&m);
        if (r < 0) {
                log_error("Cannot start without a valid configuration: fix %s (difysandbox check-config)",
                          CONFIG_FILE_MAIN);
                return EXIT_FAILURE;
        }
        log_set_max_level(m.cfg.debug ? LOG_DEBUG : LOG_INFO);

        if (event_setup(&m) < 0 || bus_setup(&m) < 0 || metrics_start(&m, &m.metrics) < 0)
                return EXIT_FAILURE;

        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        log_info("difysandbox-manager %s serving %s", VERSION, MANAGER_BUS_NAME);
        (void) manager_config_watch(&m);
        r = sd_event_loop(m.event);
        if (r < 0) {
                log_error_errno(r, "The event loop failed: %m");
                return EXIT_FAILURE;
        }
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
        return EXIT_SUCCESS;
}
