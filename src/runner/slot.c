/* slot: see slot.h. */

#include "slot.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/time-util.h"
#include "handler.h"
#include "protocol/runner-protocol.h"
#include "runtime/runtime.h"
#include "sandbox/run.h"

/* How long a new slot may take to import its preloads before it is offered anyway. */
#define SLOT_PRELOAD_WAIT_USEC (UINT64_C(60) * USEC_PER_SEC)

/* A prepared run is replaced at a random age between half this and this. Its clocks say nothing of its
 * age (sandbox/clocks.h), but a run can read other things stamped when it was made (the times of its
 * /tmp and pipes, Node's performance.nodeTiming): its age is when the pool last refilled, so when
 * another tenant was last served. Bounded, they tell at most that the pool refilled within this time,
 * which it does anyway on this schedule. Random, so that slots made together do not age out together.
 * The cost on an idle host: each slot prepared again every 7.5 minutes on average. */
#define SLOT_MAX_AGE_USEC (UINT64_C(600) * USEC_PER_SEC)
#define SLOT_MAX_AGE_VARIABLE "DIFYSANDBOX_POOL_MAX_AGE_SEC" /* for tests; 2-86400 s */

DEFINE_POINTER_CLEANUP(PreparedRun *, prepared_run_free);

/* When this slot's prepared run is replaced, on CLOCK_MONOTONIC. */
static uint64_t slot_retire_at(void) {
        const char *v = getenv(SLOT_MAX_AGE_VARIABLE);
        uint64_t max_age = SLOT_MAX_AGE_USEC, sec, random;

        if (v && (parse_uint64(v, &sec) < 0 || sec < 2 || sec > 86400))
                log_warning("Ignoring %s='%s': not a number of seconds from 2 to 86400, using %" PRIu64,
                            SLOT_MAX_AGE_VARIABLE, v, SLOT_MAX_AGE_USEC / USEC_PER_SEC);
        else if (v)
                max_age = sec * USEC_PER_SEC;
        if (getrandom(&random, sizeof(random), 0) != (ssize_t) sizeof(random))
                random = 0; /* the earliest: the bound holds */
        return now(CLOCK_MONOTONIC) + max_age / 2 + random % (max_age / 2 + 1);
}

/* Waits until the runner hands over a request (1, with the connection and code fds), closes the control
 * socket (0), or the prepared run dies (0), or until retire_at (-ETIMEDOUT; UINT64_MAX: never). */
static int wait_for_request(const HandlerContext *ctx, int control_fd, int run_pidfd, uint64_t retire_at,
                            RunnerRequest *ret_req, int *ret_conn_fd, int *ret_code_fd) {
        struct pollfd pfd[2] = {
                { .fd = control_fd, .events = POLLIN },
                { .fd = run_pidfd, .events = POLLIN },
        };
        RunnerRequestWire wire;
        int fds[2] = { -EBADF, -EBADF };
        size_t len = 0, n_fds = 0;
        int r;

        for (;;) {
                uint64_t t = now(CLOCK_MONOTONIC);
                int timeout = retire_at == UINT64_MAX ? -1
                              : retire_at <= t        ? 0
                                                      : (int) ((retire_at - t + 999) / 1000);
                r = poll(pfd, 2, timeout);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (pfd[0].revents)
                        break; /* a request, even if the run just died: handler_run() makes a fresh one */
                if (r == 0 && now(CLOCK_MONOTONIC) >= retire_at)
                        return -ETIMEDOUT;
                if (pfd[1].revents) {
                        /* The interpreter died while waiting. The runner may be handing us a request
                         * right now, so we do not just leave: we say so and wait for its answer, a
                         * request (served afresh) or the end of the control socket. */
                        SlotReady gone = { .magic = SLOT_MESSAGE_MAGIC, .packages_generation = SLOT_GONE };
                        if (runner_send(control_fd, &gone, sizeof(gone), -EBADF) < 0)
                                return 0;
                        pfd[1].fd = -1;
                        retire_at = UINT64_MAX;
                }
        }
        r = runner_recv_fds(control_fd, &wire, sizeof(wire), 0, &len, fds, 2, &n_fds);
        if (r == -ECONNRESET)
                return 0; /* retired */
        if (r >= 0 && n_fds != 2)
                r = -EBADMSG;
        if (r >= 0)
                r = runner_request_decode(&wire, len, ctx->cfg->code_max, ret_req);
        if (r < 0) {
                for (size_t i = 0; i < n_fds; i++)
                        (void) safe_close(fds[i]);
                return r;
        }
        *ret_conn_fd = fds[0];
        *ret_code_fd = fds[1];
        return 1;
}

void slot_main(const HandlerContext *ctx, Language language, bool network, bool preload, int control_fd) {
        _cleanup_(prepared_run_freep) PreparedRun *p = NULL;
        _cleanup_close_ int conn_fd = -EBADF, code_fd = -EBADF;
        RunFailure failure = { 0 };
        RunnerRequest req;
        int r;

        RunRequest prepare = { .language = (unsigned) language, .network = network, .preload = preload };
        uint64_t retire_at = slot_retire_at(); /* its age counts from here, before the run is made */
        r = sandbox_after_fork(ctx->sandbox, &failure);
        if (r >= 0)
                r = sandbox_prepare(ctx->sandbox, &prepare, &p, &failure);
        if (r < 0) {
                /* The runner backs off and tries again; a request meanwhile makes its run itself and
                 * reports the failure to its client, so one line at debug level is enough here. */
                log_debug_errno(r, "Cannot prepare a %s run for the pool (step '%s'): %m",
                                language_to_string(language), run_step_to_string(failure.step));
                run_failure_done(&failure);
                _exit(EXIT_FAILURE);
        }

        /* A slot with preloads is ready once it waits for its code, its preloads imported (pandas: a third
         * of a second of CPU): a request handed it before would wait for them. One without is offered as
         * soon as it started: the rest of its start is shorter than a run prepared on demand, which would
         * compete with it for the CPUs (measured: node keep-alive 0.85x the floor, 1.99x when it waited).
         * A slot slower than SLOT_PRELOAD_WAIT_USEC is offered all the same. */
        char *const *modules = runtime_pool_preload(runtime_get(language), ctx->cfg);
        r = preload && modules && modules[0] ? prepared_run_wait_waiting(p, SLOT_PRELOAD_WAIT_USEC) : 0;
        if (r == -ESRCH || r == -EPERM) {
                /* -EPERM: a preload made a never-allowed call; the run is never offered. */
                log_debug("A %s run of the pool died, or made a never-allowed call, while importing its "
                          "preloads",
                          language_to_string(language));
                p = prepared_run_free(p);
                _exit(EXIT_FAILURE);
        }
        if (r < 0)
                log_debug_errno(r,
                                "A %s run of the pool is not waiting for its code yet, offered anyway: %m",
                                language_to_string(language));

        SlotReady ready = {
                .magic = SLOT_MESSAGE_MAGIC,
                .packages_generation = prepared_run_packages_generation(p),
        };
        if (runner_send(control_fd, &ready, sizeof(ready), -EBADF) < 0) {
                p = prepared_run_free(p); /* the runner is gone or stopping: kill and reap the run */
                _exit(EXIT_FAILURE);
        }

        r = wait_for_request(ctx, control_fd, prepared_run_pidfd(p), retire_at, &req, &conn_fd, &code_fd);
        if (r == -ETIMEDOUT) {
                /* Too old: its run goes, and the runner, told as if it had died, prepares another. A
                 * request that crossed our message is served with a run made afresh. */
                p = prepared_run_free(p);
                SlotReady gone = { .magic = SLOT_MESSAGE_MAGIC, .packages_generation = SLOT_GONE };
                if (runner_send(control_fd, &gone, sizeof(gone), -EBADF) < 0)
                        _exit(EXIT_SUCCESS);
                r = wait_for_request(ctx, control_fd, -EBADF, UINT64_MAX, &req, &conn_fd, &code_fd);
        }
        if (r <= 0) {
                p = prepared_run_free(p);
                _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        r = handler_run(ctx, &req, code_fd, TAKE_PTR(p), conn_fd);
        _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}
