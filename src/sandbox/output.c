/* output: see output.h. */

#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "common/cleanup.h"
#include "common/time-util.h"
#include "enter/enter-protocol.h"

enum { SLOT_PID, SLOT_CODE, SLOT_STATUS, SLOT_ACK, SLOT_STDOUT, SLOT_STDERR, SLOT_EVENTS, _SLOT_MAX };

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

int output_pump(OutputFds *fds, const char *code, size_t code_len, size_t cap, uint64_t deadline_usec,
                OutputReport *ret) {
        struct pollfd p[_SLOT_MAX];
        OutputReport rep = { 0 };
        size_t code_off = 0;
        bool exited = false, killed = false;
        uint64_t exit_usec = 0, clock_offset_usec = 0;
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
        if (fcntl(fds->code_fd, F_SETFL, O_NONBLOCK) < 0)
                r = -errno;
        if (code_len == 0)
                p[SLOT_CODE].fd = safe_close(p[SLOT_CODE].fd);

        while (r >= 0) {
                uint64_t now_usec = now(CLOCK_MONOTONIC);
                int timeout_ms;
                bool open_pipes = false;

                for (int i = SLOT_CODE; i < SLOT_EVENTS; i++)
                        if (i != SLOT_CODE && p[i].fd >= 0)
                                open_pipes = true;
                if (exited && !open_pipes)
                        break;
                if (exited && now_usec >= exit_usec + DRAIN_GRACE_USEC)
                        break;

                if (!killed && !exited && now_usec >= deadline_usec && !has_exited(fds->pidfd)) {
                        rep.timed_out = true;
                        killed = true;
                        kill_run(fds->pidfd);
                }
                if (exited)
                        timeout_ms = (int) ((exit_usec + DRAIN_GRACE_USEC - now_usec) / 1000) + 1;
                else if (killed)
                        timeout_ms = -1;
                else if (now_usec >= deadline_usec)
                        timeout_ms = 0; /* it has exited (has_exited()): the poll below sees it */
                else
                        timeout_ms = (int) ((deadline_usec - now_usec + 999) / 1000);

                if (poll(p, _SLOT_MAX, timeout_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }

                if (p[SLOT_EVENTS].fd >= 0 && (p[SLOT_PID].revents || p[SLOT_EVENTS].revents) &&
                    !fds->on_events(p[SLOT_EVENTS].fd, fds->userdata))
                        p[SLOT_EVENTS].fd = -1;
                if (p[SLOT_PID].revents) {
                        p[SLOT_EVENTS].fd = -1; /* read once more at the exit, above: that is the last */
                        exited = true;
                        exit_usec = rep.exit_usec = now(CLOCK_MONOTONIC);
                        p[SLOT_PID].fd = -1;      /* owned by the caller */
                        if (p[SLOT_CODE].fd >= 0) /* nobody will read the rest */
                                p[SLOT_CODE].fd = safe_close(p[SLOT_CODE].fd);
                }

                if (p[SLOT_CODE].fd >= 0 && p[SLOT_CODE].revents) {
                        ssize_t n = write(p[SLOT_CODE].fd, code + code_off, code_len - code_off);
                        if (n > 0)
                                code_off += (size_t) n;
                        if ((n < 0 && errno != EAGAIN && errno != EINTR) || code_off == code_len)
                                p[SLOT_CODE].fd = safe_close(p[SLOT_CODE].fd); /* EPIPE: it died */
                }

                if (p[SLOT_STATUS].fd >= 0 && p[SLOT_STATUS].revents) {
                        ChildReport f;
                        ssize_t n = read(p[SLOT_STATUS].fd, &f, sizeof(f));
                        if (n == (ssize_t) sizeof(f) && f.kind == CHILD_REPORT_FAILURE) {
                                rep.setup_failed = true;
                                rep.failed_step = f.step;
                                rep.failed_error = f.error;
                        } else if (n == (ssize_t) sizeof(f) && f.kind == CHILD_REPORT_TIMING) {
                                rep.child_root_usec = f.root_done_usec;
                                rep.child_sync_usec = f.sync_done_usec;
                                rep.child_creds_usec = f.creds_done_usec;
                                clock_offset_usec = f.monotonic_offset_usec;
                        } else if (n == 0 && !rep.setup_failed)
                                rep.exec_usec = now(CLOCK_MONOTONIC);
                        /* A report is written in one piece (< PIPE_BUF): only EOF or an error ends it. */
                        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                                p[SLOT_STATUS].fd = safe_close(p[SLOT_STATUS].fd);
                }

                if (p[SLOT_ACK].fd >= 0 && p[SLOT_ACK].revents) {
                        EnterAck ack;
                        ssize_t n = read(p[SLOT_ACK].fd, &ack, sizeof(ack));
                        if (n == (ssize_t) sizeof(ack) && ack.tag == ENTER_ACK) {
                                rep.acked = true;
                                /* The run's clock lags ours by the offset. The status pipe is read
                                 * first: its report was written before execve(), so before the ack. */
                                rep.ack_usec = ack.usec + clock_offset_usec;
                        }
                        if (n >= 0 || (errno != EAGAIN && errno != EINTR))
                                p[SLOT_ACK].fd = safe_close(p[SLOT_ACK].fd); /* one ack, then EOF */
                }

                for (int i = SLOT_STDOUT; i <= SLOT_STDERR; i++) {
                        OutputBuffer *buf = i == SLOT_STDOUT ? &rep.out : &rep.err;
                        int k;

                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        k = collect(p[i].fd, buf, cap);
                        if (rep.first_output_usec == 0 && buf->len > 0)
                                rep.first_output_usec = now(CLOCK_MONOTONIC);
                        if (k < 0) {
                                r = k;
                                break;
                        }
                        if (k == 0)
                                p[i].fd = safe_close(p[i].fd);
                        if (buf->truncated && !killed) {
                                /* Marked, not silent: the run ends here and says why. */
                                rep.output_truncated = true;
                                killed = true;
                                kill_run(fds->pidfd);
                        }
                }
        }

        for (int i = SLOT_CODE; i < SLOT_EVENTS; i++)
                (void) safe_close(p[i].fd);
        fds->code_fd = fds->status_fd = fds->ack_fd = fds->stdout_fd = fds->stderr_fd = -EBADF;

        if (r >= 0)
                r = ensure_string(&rep.out);
        if (r >= 0)
                r = ensure_string(&rep.err);
        if (r < 0) {
                kill_run(fds->pidfd);
                output_report_done(&rep);
                return r;
        }
        *ret = rep;
        return 0;
}

void output_report_done(OutputReport *report) {
        free(report->out.data);
        free(report->err.data);
        *report = (OutputReport){ 0 };
}
