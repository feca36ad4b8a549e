#pragma once
/* job: starting a dependency job (InstallDependencies, RefreshDependencies) and following it to its end
 * through the job object's PropertiesChanged (State, Progress, Log) and the manager's JobRemoved, with a
 * progress bar on a terminal, plain lines otherwise, or one JSON object at the end. Logging, as bus.h. */

#include <stdbool.h>

#include <systemd/sd-bus.h>

typedef enum JobOutput {
        JOB_OUTPUT_LINES, /* each new log line, and "progress N%" when the percentage changes */
        JOB_OUTPUT_BAR,   /* one line redrawn with \r: percent, bar, last log line, elapsed */
        JOB_OUTPUT_JSON,  /* nothing until the end, then {"job", "result", "log"} */
} JobOutput;

/* Sends call, a method whose reply is the job's object path. With no_wait prints that path (or
 * {"job": PATH}) and returns 0. Otherwise subscribes to the job's signals first, so that nothing is
 * missed, and follows the job: returns 0 when it is done, CTL_EXIT_FAILURE when it failed (its log's
 * tail then goes to stderr), CTL_EXIT_UNREACHABLE when the manager or the bus went away, 128 + the
 * signal number on SIGINT or SIGTERM (the job keeps running), or what bus_call() returned. what names
 * the job in messages: "install python3". */
int job_run(sd_bus *bus, sd_bus_message *call, const char *what, JobOutput output, bool no_wait);
