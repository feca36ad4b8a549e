#pragma once
/* log: the one place that writes log records. Sends structured records to journald (MESSAGE=, PRIORITY=,
 * ERRNO=, CODE_*=) and falls back to "<N>message" on stderr where there is no journal socket. The log
 * target and the maximum level are the only global state of the project (STYLE.md). */

#include <stdbool.h>
#include <syslog.h>

void log_set_max_level(int level);
void log_set_target_stderr(bool stderr_only);

/* Logs at level; %m prints strerror(-error). Returns error (negative errno) so callers can write
 * `return log_error_errno(r, "...: %m");`. error 0 logs without an ERRNO= field. */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        __attribute__((format(printf, 6, 7)));

#define log_full_errno(level, error, ...) \
        log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)
