#pragma once
/* ctl: what every file of difysandboxctl shares: the names on the bus, the exit statuses (documented in
 * difysandboxctl(1); tests assert them) and the shape of an error line. Functions of difysandboxctl
 * return a negative errno (exit status 1) or one of these statuses, as systemd's tools do. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#define CTL_PROGRAM "difysandboxctl"

#define MANAGER_BUS_NAME "org.difysandbox.Sandbox1"
#define MANAGER_OBJECT_PATH "/org/difysandbox/Sandbox1"
#define MANAGER_INTERFACE "org.difysandbox.Sandbox1.Manager"
#define JOB_INTERFACE "org.difysandbox.Sandbox1.Job"
#define JOB_PATH_PREFIX "/org/difysandbox/Sandbox1/job"

#define MANAGER_ERROR_CONFIG_INVALID "org.difysandbox.Sandbox1.Error.ConfigInvalid"

enum {
        CTL_EXIT_SUCCESS = 0,
        CTL_EXIT_FAILURE = 1,     /* the request failed: the manager refused it, or the job failed */
        CTL_EXIT_USAGE = 2,       /* wrong arguments; nothing was sent */
        CTL_EXIT_UNREACHABLE = 3, /* no system bus, or no manager on it */
        CTL_EXIT_DENIED = 4,      /* the manager or the bus refused the caller */
};

/* One line on stderr: "difysandboxctl: MESSAGE". */
static inline __attribute__((format(printf, 1, 2))) void ctl_error(const char *format, ...) {
        va_list ap;

        (void) fflush(stdout); /* keep the order of what a terminal shows */
        (void) fputs(CTL_PROGRAM ": ", stderr);
        va_start(ap, format);
        (void) vfprintf(stderr, format, ap);
        va_end(ap);
        (void) fputc('\n', stderr);
}

static inline int ctl_oom(void) {
        ctl_error("out of memory");
        return -ENOMEM;
}
