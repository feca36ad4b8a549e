/* log: see log.h. */

#define SD_JOURNAL_SUPPRESS_LOCATION

#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

static int max_level = LOG_INFO;
static int target = -1;     /* -1: not decided yet; 0: journal; 1: stderr */
static bool stderr_journal; /* stderr is a journal stream: "<N>" prefixes mean something there */
static pid_t object_pid;    /* 0: none */

void log_set_max_level(int level) {
        max_level = level;
}

void log_set_target_journal(void) {
        struct stat st;

        if (stat("/run/systemd/journal/socket", &st) == 0)
                target = 0;
}

/* Whether stderr is the journal stream systemd gave us: JOURNAL_STREAM holds its "DEV:INODE", as
 * systemd's own log target logic checks (a child that inherited the variable but not the stream, say a
 * shell started from a service, must not believe it). */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        int n = 0;

        if (!e || sscanf(e, "%llu:%llu%n", &dev, &ino, &n) != 2 || e[n] != '\0')
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_set_object_pid(pid_t pid) {
        object_pid = pid;
}

/* The last field of every native record: sd_journal_send() stops at the first NULL format, so without an
 * object PID the argument after it is never read. */
#define OBJECT_FIELD (object_pid > 0 ? "OBJECT_PID=%i" : NULL), (int) object_pid

bool log_use_journal(void) {
        struct stat st;

        if (target < 0) {
                /* Native records when stderr is the journal anyway (the service case) and the socket
                 * exists; otherwise stderr, with the "<N>" prefix only where journald reads it. */
                stderr_journal = stderr_is_journal();
                target = (stderr_journal && stat("/run/systemd/journal/socket", &st) == 0) ? 0 : 1;
        }
        return target == 0;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                 ...) {
        char message[2048]; /* a log line, never untrusted input: callers quote and bound what users send */
        int saved = errno;
        va_list ap;

        if (level > max_level)
                return error;

        errno = error < 0 ? -error : error; /* %m in glibc's vsnprintf reads errno */
        va_start(ap, format);
        (void) vsnprintf(message, sizeof(message), format, ap);
        va_end(ap);

        if (log_use_journal()) {
                if (error != 0)
                        (void) sd_journal_send("MESSAGE=%s", message, "PRIORITY=%i", level, "ERRNO=%i",
                                               error < 0 ? -error : error, "CODE_FILE=%s", file,
                                               "CODE_LINE=%i", line, "CODE_FUNC=%s", func, OBJECT_FIELD,
                                               NULL);
                else
                        (void) sd_journal_send("MESSAGE=%s", message, "PRIORITY=%i", level, "CODE_FILE=%s",
                                               file, "CODE_LINE=%i", line, "CODE_FUNC=%s", func,
                                               OBJECT_FIELD, NULL);
        } else if (stderr_journal)
                (void) fprintf(stderr, "<%i>%s\n", level, message);
        else /* a terminal, a file, a pipe to a program: words for a person */
                (void) fprintf(stderr, "%s\n", message);

        errno = saved;
        return error;
}

void log_run_record(const RunRecord *rec) {
        if (!log_use_journal()) {
                (void) log_internal(LOG_DEBUG, 0, __FILE__, __LINE__, __func__, /* stderr is the CLI's */
                                    "Run %s (%s) finished: %s, exit code %d, %" PRIu64 " ms%s%s", rec->id,
                                    rec->language, rec->result, rec->exit_code, rec->duration_usec / 1000,
                                    rec->refused_syscalls ? ", refused calls: " : "",
                                    rec->refused_syscalls ? rec->refused_syscalls : "");
                return;
        }
        (void) sd_journal_send(
                "MESSAGE=Run %s (%s) finished: %s, exit code %d", rec->id, rec->language, rec->result,
                rec->exit_code, "MESSAGE_ID=" MESSAGE_RUN_FINISHED_STR, "PRIORITY=%i", LOG_INFO,
                "DIFYSANDBOX_RUN_ID=%s", rec->id, "LANGUAGE=%s", rec->language, "RESULT=%s", rec->result,
                "EXIT_CODE=%i", rec->exit_code, "DURATION_USEC=%" PRIu64, rec->duration_usec,
                "CPU_USEC=%" PRIu64, rec->cpu_usec, "MEMORY_PEAK=%" PRIu64, rec->memory_peak, "UID=%u",
                (unsigned) rec->uid, "STDOUT_BYTES=%" PRIu64, rec->stdout_bytes, "STDERR_BYTES=%" PRIu64,
                rec->stderr_bytes, "EGRESS_DENIALS=%u", rec->egress_denials, "WARM=%i", rec->warm,
                "PHASE_UID_USEC=%" PRIu64, rec->phase_uid, "PHASE_CGROUP_USEC=%" PRIu64, rec->phase_cgroup,
                "PHASE_SPAWN_USEC=%" PRIu64, rec->phase_spawn, "PHASE_ATTACH_USEC=%" PRIu64,
                rec->phase_attach, "PHASE_ROOT_USEC=%" PRIu64, rec->phase_root,
                "PHASE_CREDS_SECCOMP_USEC=%" PRIu64, rec->phase_creds_seccomp,
                "PHASE_INTERPRETER_USEC=%" PRIu64, rec->phase_interpreter, "PHASE_USER_CODE_USEC=%" PRIu64,
                rec->phase_user_code, "PHASE_CLEANUP_USEC=%" PRIu64, rec->phase_cleanup,
                /* Empty for a run that made no refused call, so that every record has the same fields. */
                "SYSCALL=%s", rec->syscall ? rec->syscall : "", "REFUSED_SYSCALLS=%s",
                rec->refused_syscalls ? rec->refused_syscalls : "", "REFUSED_SYSCALL_COUNT=%" PRIu64,
                rec->refused_total, OBJECT_FIELD, NULL);
}
