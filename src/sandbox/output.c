/* output: see output.h. */

#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "common/cleanup.h"
#include "common/time-util.h"
#include "enter/enter-protocol.h"

enum {
        SLOT_PID,
        SLOT_CODE,
        SLOT_STATUS,
        SLOT_ACK,
        SLOT_STDOUT,
        SLOT_STDERR,
        SLOT_EVENTS,
        SLOT_LISTENER,
        SLOT_NOTIFY,
        _SLOT_MAX
};

/* Once PID 1 has exited every process of the run is gone, so the pipes reach EOF at once; this only
 * bounds the wait should that ever not hold. */
#define DRAIN_GRACE_USEC (2ULL * 1000000ULL)

static void kill_run(int pidfd) {
        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0); /* fails only if already gone */
}

/* Whether the run's PID 1 has exited already. When this process stalled past the deadline (stopped,
 * starved), a run that ended on its own meanwhile must get its real result, not a timeout: the poll that
 * would have seen its exit is only now about to run. */
static bool has_exited(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        return poll(&p, 1, 0) > 0;
}

/* Appends what fd has to buf, up to cap bytes; the rest is read and dropped. Returns 0 at EOF, 1 when
 * more may come, -errno on error. */
static int collect(int fd, OutputBuffer *buf, size_t cap) {
        char chunk[65536];
        ssize_t n;

        n = read(fd, chunk, sizeof(chunk));
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 1 : -errno;
        if (n == 0)
                return 0;

        size_t keep = (size_t) n;
        if (buf->len + keep > cap) {
                keep = cap - buf->len;
                buf->truncated = true;
        }
        if (keep > 0) {
                char *d = realloc(buf->data, buf->len + keep + 1);
                if (!d)
                        return -ENOMEM;
                memcpy(d + buf->len, chunk, keep);
                buf->data = d;
                buf->len += keep;
                buf->data[buf->len] = '\0';
        }
        return 1;
}

static int ensure_string(OutputBuffer *buf) {
        if (!buf->data) {
                buf->data = strdup("");
                if (!buf->data)
                        return -ENOMEM;
        }
        return 0;
}

/* The state of one pump: the poll set, the report being filled, how far the code got, and whether the
 * run has exited or been killed. */
typedef struct Pump {
        OutputFds *fds;
        struct pollfd p[_SLOT_MAX];
        OutputReport rep;
        const char *code;
        size_t code_len, code_off, cap;
        uint64_t deadline_usec;
        bool exited, killed;
        uint64_t exit_usec, clock_offset_usec, ack_raw_usec;
} Pump;

static int pump_init(Pump *s) {
        OutputFds *fds = s->fds;
        struct pollfd *p = s->p;
        int r = 0;

        for (int i = 0; i < _SLOT_MAX; i++)
                p[i] = (struct pollfd){ .fd = -1 };
        p[SLOT_PID] = (struct pollfd){ .fd = fds->pidfd, .events = POLLIN };
        p[SLOT_CODE] = (struct pollfd){ .fd = fds->code_fd, .events = POLLOUT };
        p[SLOT_STATUS] = (struct pollfd){ .fd = fds->status_fd, .events = POLLIN };
        p[SLOT_ACK] = (struct pollfd){ .fd = fds->ack_fd, .events = POLLIN };
        p[SLOT_STDOUT] = (struct pollfd){ .fd = fds->stdout_fd, .events = POLLIN };
        p[SLOT_STDERR] = (struct pollfd){ .fd = fds->stderr_fd, .events = POLLIN };
        if (fds->on_events)
                p[SLOT_EVENTS] = (struct pollfd){ .fd = fds->events_fd, .events = POLLPRI };
        if (fds->acked) {
                s->rep.acked = true;
                s->ack_raw_usec = fds->ack_usec;
                p[SLOT_NOTIFY] = (struct pollfd){ .fd = TAKE_FD(fds->notify_fd), .events = POLLIN };
        }
        s->rep.refusals = fds->refusals;
        if (fds->on_connection && fds->listener_fd >= 0)
                p[SLOT_LISTENER] = (struct pollfd){ .fd = fds->listener_fd, .events = POLLIN };
        if (fcntl(fds->code_fd, F_SETFL, O_NONBLOCK) < 0)
                r = -errno;
        if (s->code_len == 0)
                p[SLOT_CODE].fd = safe_close(p[SLOT_CODE].fd);
        return r;
}

/* Whether the pump is over: the run has exited and its pipes are drained, or their grace has passed. */
static bool pump_done(const Pump *s, uint64_t now_usec) {
        bool open_pipes = false;

        for (int i = SLOT_CODE; i < SLOT_EVENTS; i++)
                if (i != SLOT_CODE && s->p[i].fd >= 0)
                        open_pipes = true;
        if (s->exited && !open_pipes)
                return true;
        if (s->exited && now_usec >= s->exit_usec + DRAIN_GRACE_USEC)
                return true;
        return false;
}

static void pump_kill(Pump *s) {
        s->killed = true;
        kill_run(s->fds->pidfd);
}

/* Kills the run at its deadline, unless it has exited already: then its exit wins (has_exited()). */
static void pump_enforce_deadline(Pump *s, uint64_t now_usec) {
        if (!s->killed && !s->exited && now_usec >= s->deadline_usec && !has_exited(s->fds->pidfd)) {
                s->rep.timed_out = true;
                pump_kill(s);
        }
}

static int pump_poll_timeout_ms(const Pump *s, uint64_t now_usec) {
        if (s->exited)
                return (int) ((s->exit_usec + DRAIN_GRACE_USEC - now_usec) / 1000) + 1;
        if (s->killed)
                return -1;
        if (now_usec >= s->deadline_usec)
                return 0; /* it has exited (has_exited()): the poll below sees it */
        return (int) ((s->deadline_usec - now_usec + 999) / 1000);
}

static void pump_events_and_exit(Pump *s) {
        struct pollfd *p = s->p;

        if (p[SLOT_EVENTS].fd >= 0 && (p[SLOT_PID].revents || p[SLOT_EVENTS].revents) &&
            !s->fds->on_events(p[SLOT_EVENTS].fd, s->fds->userdata))
                p[SLOT_EVENTS].fd = -1;
        if (p[SLOT_PID].revents) {
                p[SLOT_EVENTS].fd = -1;   /* read once more at the exit, above: that is the last */
                p[SLOT_LISTENER].fd = -1; /* no relay for a run that is gone */
                p[SLOT_NOTIFY].fd = safe_close(p[SLOT_NOTIFY].fd); /* nothing of it can call any more */
                s->exited = true;
                s->exit_usec = s->rep.exit_usec = now(CLOCK_MONOTONIC);
                p[SLOT_PID].fd = -1;      /* owned by the caller */
                if (p[SLOT_CODE].fd >= 0) /* nobody will read the rest */
                        p[SLOT_CODE].fd = safe_close(p[SLOT_CODE].fd);
        }
}

static void pump_write_code(Pump *s) {
        struct pollfd *c = &s->p[SLOT_CODE];

        if (c->fd < 0 || !c->revents)
                return;
        ssize_t n = write(c->fd, s->code + s->code_off, s->code_len - s->code_off);
        if (n > 0)
                s->code_off += (size_t) n;
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || s->code_off == s->code_len)
                c->fd = safe_close(c->fd); /* EPIPE: it died */
}

static void pump_read_status(Pump *s) {
        struct pollfd *st = &s->p[SLOT_STATUS];
        OutputReport *rep = &s->rep;
        ChildReport f;

        if (st->fd < 0 || !st->revents)
                return;
        ssize_t n = read(st->fd, &f, sizeof(f));
        if (n == (ssize_t) sizeof(f) && f.kind == CHILD_REPORT_FAILURE) {
                rep->setup_failed = true;
                rep->failed_step = f.step;
                rep->failed_error = f.error;
        } else if (n == (ssize_t) sizeof(f) && f.kind == CHILD_REPORT_TIMING) {
                rep->child_root_usec = f.root_done_usec;
                rep->child_sync_usec = f.sync_done_usec;
                rep->child_creds_usec = f.creds_done_usec;
                s->clock_offset_usec = f.monotonic_offset_usec;
        } else if (n == 0 && !rep->setup_failed)
                rep->exec_usec = now(CLOCK_MONOTONIC);
        /* A report is written in one piece (< PIPE_BUF): only EOF or an error ends it. */
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                st->fd = safe_close(st->fd);
}

static void pump_read_ack(Pump *s) {
        struct pollfd *a = &s->p[SLOT_ACK];
        EnterAck ack;
        int listener = -EBADF, r;

        if (a->fd < 0 || !a->revents)
                return;
        r = output_receive_ack(a->fd, &ack, &listener);
        if (r == -EAGAIN || r == -EINTR)
                return;
        if (r > 0) {
                s->rep.acked = true;
                s->ack_raw_usec = ack.usec;
                if (!s->exited && s->p[SLOT_NOTIFY].fd < 0)
                        s->p[SLOT_NOTIFY] = (struct pollfd){ .fd = TAKE_FD(listener), .events = POLLIN };
                (void) safe_close(listener);
        }
        a->fd = safe_close(a->fd); /* one ack, then EOF */
}

/* A call the filters refused: answered, or the run ends here when it is never to be allowed. */
static void pump_answer_refusal(Pump *s) {
        struct pollfd *n = &s->p[SLOT_NOTIFY];
        int r;

        if (n->fd < 0 || !n->revents)
                return;
        if (n->revents & (POLLHUP | POLLERR | POLLNVAL) && !(n->revents & POLLIN)) {
                n->fd = safe_close(n->fd); /* no task is left under the filter */
                return;
        }
        r = refusals_answer(n->fd, &s->rep.refusals);
        if (r < 0) {
                /* A listener we cannot read leaves calls waiting: end the run rather than hang it. */
                n->fd = safe_close(n->fd);
                if (!s->killed)
                        pump_kill(s);
                return;
        }
        if (r > 0 && !s->killed) {
                s->rep.seccomp_killed = true;
                pump_kill(s);
        }
}

/* The run's first connection to its egress listener starts the relay (OutputFds.on_connection); if it
 * cannot start, the run ends: its connection would wait for nobody. */
static void pump_start_relay(Pump *s) {
        struct pollfd *l = &s->p[SLOT_LISTENER];
        int r;

        if (l->fd < 0 || !l->revents)
                return;
        l->fd = -1; /* the relay accepts from now on; the fd is the caller's */
        if (s->killed)
                return;
        r = s->fds->on_connection(s->fds->connection_userdata);
        if (r < 0) {
                s->rep.egress_error = r;
                pump_kill(s);
        }
}

/* Collects stdout and stderr; output over the cap ends the run. Returns -errno on error, else 0. */
static int pump_read_output(Pump *s) {
        OutputReport *rep = &s->rep;

        for (int i = SLOT_STDOUT; i <= SLOT_STDERR; i++) {
                OutputBuffer *buf = i == SLOT_STDOUT ? &rep->out : &rep->err;
                int k;

                if (s->p[i].fd < 0 || !s->p[i].revents)
                        continue;
                k = collect(s->p[i].fd, buf, s->cap);
                if (rep->first_output_usec == 0 && buf->len > 0)
                        rep->first_output_usec = now(CLOCK_MONOTONIC);
                if (k < 0)
                        return k;
                if (k == 0)
                        s->p[i].fd = safe_close(s->p[i].fd);
                if (buf->truncated && !s->killed) {
                        /* Marked, not silent: the run ends here and says why. */
                        rep->output_truncated = true;
                        pump_kill(s);
                }
        }
        return 0;
}

/* One round: the deadline, one poll, then every fd that is ready, in this order (the status pipe
 * before the ack). Returns 1 to go on, 0 when done, -errno on error. */
static int pump_step(Pump *s) {
        uint64_t now_usec = now(CLOCK_MONOTONIC);

        if (pump_done(s, now_usec))
                return 0;
        pump_enforce_deadline(s, now_usec);
        if (poll(s->p, _SLOT_MAX, pump_poll_timeout_ms(s, now_usec)) < 0)
                return errno == EINTR ? 1 : -errno;

        pump_events_and_exit(s);
        pump_start_relay(s);
        pump_write_code(s);
        pump_read_status(s);
        pump_read_ack(s);
        pump_answer_refusal(s);
        int r = pump_read_output(s);
        return r < 0 ? r : 1;
}

int output_pump(OutputFds *fds, const char *code, size_t code_len, size_t cap, uint64_t deadline_usec,
                OutputReport *ret) {
        Pump s = {
                .fds = fds,
                .code = code,
                .code_len = code_len,
                .cap = cap,
                .deadline_usec = deadline_usec,
        };
        int r;

        r = pump_init(&s);
        while (r >= 0) {
                r = pump_step(&s);
                if (r == 0)
                        break;
        }

        for (int i = SLOT_CODE; i < SLOT_EVENTS; i++)
                (void) safe_close(s.p[i].fd);
        (void) safe_close(s.p[SLOT_NOTIFY].fd);
        fds->code_fd = fds->status_fd = fds->ack_fd = fds->stdout_fd = fds->stderr_fd = -EBADF;
        /* The run's clock lags ours by the offset of the child's timing report (read from the status pipe,
         * which was written before execve(), so before the ack). */
        if (s.rep.acked)
                s.rep.ack_usec = s.ack_raw_usec + s.clock_offset_usec;

        if (r >= 0)
                r = ensure_string(&s.rep.out);
        if (r >= 0)
                r = ensure_string(&s.rep.err);
        if (r < 0) {
                kill_run(fds->pidfd);
                output_report_done(&s.rep);
                return r;
        }
        *ret = s.rep;
        return 0;
}

int output_receive_ack(int fd, EnterAck *ret_ack, int *ret_listener) {
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } control;
        struct iovec iov = { .iov_base = ret_ack, .iov_len = sizeof(*ret_ack) };
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        int listener = -EBADF;
        ssize_t n;

        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&listener, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t) sizeof(*ret_ack) || ret_ack->tag != ENTER_ACK || listener < 0 ||
            (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                (void) safe_close(listener);
                return 0; /* EOF, or not an ack: the run was never confirmed */
        }
        *ret_listener = listener;
        return 1;
}

void output_report_done(OutputReport *report) {
        free(report->out.data);
        free(report->err.data);
        *report = (OutputReport){ 0 };
}
