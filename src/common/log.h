#pragma once
/* log: the one place that writes log records. Sends structured records to journald (MESSAGE=, PRIORITY=,
 * ERRNO=, CODE_*=) when stderr is the journal stream (JOURNAL_STREAM names its device and inode), and
 * otherwise writes the plain message to stderr ("<N>message" only if stderr is a journal stream without a
 * journal socket to talk to). The log target, the maximum level and the object PID are the only global
 * state of the project (STYLE.md). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>

void log_set_max_level(int level);
/* Native journal records whatever stderr is, where journald's socket exists: for a unit whose stderr
 * systemd could not connect to the journal (difysandbox-installer's is the manager's pipe). */
void log_set_target_journal(void);
/* Whether records go to journald (stderr is the journal stream and its socket exists). */
bool log_use_journal(void);
/* Names pid, a long-lived process of this unit, as OBJECT_PID= of every native record from now on, in
 * this process and the children it forks. journald learns a record's unit by reading the sender's /proc
 * when it gets to the datagram; a handler that logs and exits at once is often gone by then, and its
 * record has no unit (measured in the system-test container: 61 of 200). For a root sender journald
 * resolves OBJECT_PID to OBJECT_SYSTEMD_UNIT=, which `journalctl -u` matches. 0 turns it off. */
void log_set_object_pid(pid_t pid);

/* Logs at level; %m prints strerror(-error). Returns error (negative errno) so callers can write
 * `return log_error_errno(r, "...: %m");`. error 0 logs without an ERRNO= field. */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...)
        __attribute__((format(printf, 6, 7)));

#define log_full_errno(level, error, ...) \
        log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, error, __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, error, __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, error, __VA_ARGS__)

/* The message catalog's IDs (catalog/difysandbox.catalog; the request record's and the egress denial's
 * are defined beside their writers, src/worker/http.c and src/egress/egress.h). */
#define MESSAGE_RUN_FINISHED_STR "6b4c976ba6474881ab52fe04f0940326"
#define MESSAGE_CONFIG_RELOADED_STR "3f1c5e0b8f4a4c51a0c9d6e2b7a81f44"
#define MESSAGE_CONFIG_REFUSED_STR "9a7d2c61e35b4f0e8b1f4c2d6a9e0b37"
#define MESSAGE_JOB_FINISHED_STR "c1d8a4f2b9e34d7a8e5b60f3a2c9d417"

typedef struct RunRecord {
        const char *id;       /* the run's hex id */
        const char *language; /* "python3", "nodejs" */
        const char *result;   /* "ok", "error", ... */
        int exit_code;
        uint64_t duration_usec, cpu_usec, memory_peak;
        uid_t uid;
        uint64_t stdout_bytes, stderr_bytes; /* sizes only: never code or output */
        unsigned egress_denials;             /* destinations the egress proxy refused */
        bool warm;                           /* prepared before its request (prewarm) */
        /* where the time went (RunTiming, difysandbox run --timing), microseconds */
        uint64_t phase_uid, phase_cgroup, phase_spawn, phase_attach, phase_root, phase_creds_seccomp,
                phase_interpreter, phase_user_code, phase_cleanup;
        /* The system calls its filters refused (src/sandbox/refusals.h), or NULL: SYSCALL= names the one
         * that killed the run, else the first refused; REFUSED_SYSCALLS= lists each as name:count (empty
         * fields for a run that made none). */
        const char *syscall;
        const char *refused_syscalls;
        uint64_t refused_total;
} RunRecord;

/* One structured record per run (DESIGN §3 step 11), with MESSAGE_ID=MESSAGE_RUN_FINISHED_STR. */
void log_run_record(const RunRecord *rec);
