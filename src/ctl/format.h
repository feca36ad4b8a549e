#pragma once
/* format: difysandboxctl's text for people and for scripts: time spans, timestamps, the progress line of
 * a job, text fitted to a terminal, and one-line JSON on stdout. Non-logging; nothing here talks to the
 * bus. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/cleanup.h"

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);

#define FORMAT_TIMESPAN_MAX 32
#define FORMAT_TIMESTAMP_MAX 64

/* "450ms", "2.5s", "42s", "12min 5s", "3h 12min", "2d 4h": the two largest units, as systemd shows. */
char *format_timespan(char buf[static FORMAT_TIMESPAN_MAX], uint64_t usec);

/* A CLOCK_REALTIME time in microseconds as local "2024-05-01 12:00:00 CEST"; "n/a" for 0. */
char *format_timestamp(char buf[static FORMAT_TIMESTAMP_MAX], uint64_t realtime_usec);

/* The width of the terminal on fd, else $COLUMNS, else 80. */
unsigned format_columns(int fd);

/* The last non-empty line of a log and its length (no newline); NULL when there is none. */
const char *format_last_line(const char *log, size_t len, size_t *ret_len);

/* " 42% [########------------] Collecting numpy   0:07", at most columns - 1 cells so that it never
 * wraps: the log line is cut to fit, and left out (then the bar too) on very narrow terminals. */
int format_progress_line(double progress, const char *log_line, size_t log_line_len, uint64_t elapsed_usec,
                         unsigned columns, char **ret);

/* A json-c string of text that may not be valid UTF-8 (a job's log): invalid sequences become U+FFFD. */
json_object *format_json_string(const char *text, size_t len);

/* Prints o on one line on stdout. Returns 0 or -EIO. */
int format_json_print(json_object *o);
