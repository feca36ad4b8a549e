#pragma once
/* output: the parent's side of a running run (DESIGN §3.8–9). One poll loop feeds the code into its pipe,
 * collects stdout and stderr up to a cap each, reads the child's setup failure report and the enter
 * library's ack with the final stage's seccomp listener, answers the calls the filters refuse (refusals.h),
 * and enforces the wall-clock deadline. On the deadline or the cap it SIGKILLs the run's
 * PID 1 through its pidfd, which takes the whole PID namespace with it. It returns once the run's PID 1
 * has exited and every pipe is at EOF; the caller reaps it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "refusals.h"

typedef struct OutputBuffer {
        char *data; /* NUL-terminated */
        size_t len;
        bool truncated;
} OutputBuffer;

typedef struct OutputFds {
        int pidfd;     /* the run's PID 1 */
        int code_fd;   /* write end; closed by the pump when the code is written */
        int status_fd; /* read end: ChildReport(s), then EOF at execve() */
        int ack_fd;    /* our end of the ack socket: ENTER_ACK with the final stage's listener, or -1 when a
                        * prepared run received it already (acked, ack_usec and notify_fd below) */
        bool acked;    /* received before the pump: ack_usec is the run's clock, notify_fd its listener */
        uint64_t ack_usec;
        int notify_fd;     /* the final stage's seccomp listener when acked; consumed (closed) by the pump */
        Refusals refusals; /* what was refused before the pump (a prepared run's preloads) */
        int stdout_fd, stderr_fd;
        /* Optional (on_events NULL: none): a cgroup file that signals changes with POLLPRI (memory.events),
         * and what to do with it. Called on each change and once when PID 1 exits, while the cgroup is
         * most likely still there; not closed by the pump. on_events returns false to stop watching (the
         * file cannot be read: a cgroup removed meanwhile would signal without end). */
        int events_fd;
        bool (*on_events)(int fd, void *userdata);
        void *userdata;
        /* Optional (on_connection NULL: none): the run's egress listener (src/egress/egress.h). Its first
         * pending connection calls on_connection once, which starts the relay that accepts from then on,
         * so that a run that never connects costs no relay process. A negative errno from it ends the run
         * (OutputReport.egress_error). Not closed by the pump. */
        int listener_fd;
        int (*on_connection)(void *userdata);
        void *connection_userdata;
} OutputFds;

typedef struct OutputReport {
        OutputBuffer out, err;
        bool timed_out;        /* the deadline passed and the run was killed */
        bool output_truncated; /* a cap was reached and the run was killed */
        bool setup_failed;     /* the child reported a failed step */
        int32_t failed_step;   /* RunStep */
        int32_t failed_error;  /* negative errno */
        bool acked;            /* the enter library installed the final stage */
        bool seccomp_killed;   /* a never-allow call: the pump killed the run (refusals.killed_nr) */
        Refusals refusals;     /* every call the filters refused, named (refusals.h) */
        int32_t egress_error;  /* on_connection failed (negative errno) and the run was killed */
        /* CLOCK_MONOTONIC, 0 when it never happened */
        uint64_t child_root_usec, child_sync_usec, child_creds_usec; /* from the child's timing report */
        uint64_t exec_usec;         /* the status pipe closed: the interpreter is executing */
        uint64_t ack_usec;          /* the final stage is installed: user code is next (the child's clock) */
        uint64_t first_output_usec; /* the first byte on stdout or stderr */
        uint64_t exit_usec;         /* PID 1 of the run exited */
} OutputReport;

/* fds are consumed (closed). deadline_usec is CLOCK_MONOTONIC. */
int output_pump(OutputFds *fds, const char *code, size_t code_len, size_t cap, uint64_t deadline_usec,
                OutputReport *ret);
void output_report_done(OutputReport *report);

typedef struct EnterAck EnterAck;
/* Reads the enter library's ack from fd (non-blocking): 1 with *ret_ack and *ret_listener (the final stage's
 * seccomp listener, ours to close) set, 0 when what came is EOF or no whole ack, -errno (-EAGAIN: nothing
 * yet). Also for run.c, which takes a prepared run's ack while it imports its preloads. */
int output_receive_ack(int fd, EnterAck *ret_ack, int *ret_listener);
