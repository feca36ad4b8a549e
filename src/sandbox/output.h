#pragma once
/* output: the parent's side of a running run (DESIGN §3.8–9). One poll loop feeds the code into its pipe,
 * collects stdout and stderr up to a cap each, reads the child's setup failure report and the enter
 * library's ack, and enforces the wall-clock deadline. On the deadline or the cap it SIGKILLs the run's
 * PID 1 through its pidfd, which takes the whole PID namespace with it. It returns once the run's PID 1
 * has exited and every pipe is at EOF; the caller reaps it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct OutputBuffer {
        char *data; /* NUL-terminated */
        size_t len;
        bool truncated;
} OutputBuffer;

typedef struct OutputFds {
        int pidfd;     /* the run's PID 1 */
        int code_fd;   /* write end; closed by the pump when the code is written */
        int status_fd; /* read end: ChildFailure, or EOF at execve() */
        int ack_fd;    /* read end: ENTER_ACK */
        int stdout_fd, stderr_fd;
} OutputFds;

typedef struct OutputReport {
        OutputBuffer out, err;
        bool timed_out;        /* the deadline passed and the run was killed */
        bool output_truncated; /* a cap was reached and the run was killed */
        bool setup_failed;     /* the child reported a failed step */
        int32_t failed_step;   /* ChildStep */
        int32_t failed_error;  /* negative errno */
        bool acked;            /* the enter library installed the final stage */
        uint64_t exec_usec;    /* CLOCK_MONOTONIC when the status pipe closed (the exec), 0 if never */
} OutputReport;

/* fds are consumed (closed). deadline_usec is CLOCK_MONOTONIC. */
int output_pump(OutputFds *fds, const char *code, size_t code_len, size_t cap, uint64_t deadline_usec,
                OutputReport *ret);
void output_report_done(OutputReport *report);

uint64_t now_usec(void);
