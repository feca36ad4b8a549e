/* child: see child.h. */

#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "common/creds.h"
#include "common/time-util.h"
#include "enter/enter-protocol.h"
#include "netns.h"
#include "rlimits.h"
#include "rootfs.h"
#include "seccomp.h"

/* What our CLOCK_MONOTONIC lags the parent's by, modulo 2^64, once we are in the run's time namespace
 * (this process only: the child is a copy of the parent's memory). */
static uint64_t clock_offset_usec;

/* On the parent's clock, so that it can compare (vDSO: no syscall, so the exec filter allows it). The sum
 * wraps where the run's clock is ahead of the parent's, which unsigned arithmetic makes right. */
static uint64_t monotonic_usec(void) {
        return now(CLOCK_MONOTONIC) + clock_offset_usec;
}

static void child_failed(int status_fd, RunStep step, int error) __attribute__((noreturn));
static int parent_death_kills_us(int status_fd) {
        struct pollfd p = { .fd = status_fd, .events = POLLOUT };

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        if (poll(&p, 1, 0) < 0)
                return -errno;
        if (p.revents & (POLLERR | POLLHUP))
                return -ESRCH; /* no reader: the parent is gone */
        return 0;
}

static int signals_reset(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t none;

        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL); /* EINVAL for glibc's reserved ones only */
        if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                return -errno;
        return 0;
}

/* Our network namespace is empty; the only way out is the proxy the parent serves on this listener. */
static int hand_over_proxy_listener(int sock) {
        int listener, r;

        r = netns_open_proxy_listener(&listener);
        if (r < 0)
                return r;
        r = netns_send_fd(sock, listener);
        (void) close(listener); /* the parent has its own copy now; the run must not accept on it */
        (void) close(sock);
        return r;
}

static void child_failed(int status_fd, RunStep step, int error) {
        ChildReport f = { .kind = CHILD_REPORT_FAILURE, .step = step, .error = error };
        (void) !write(status_fd, &f, sizeof(f)); /* if even this fails, the parent sees exit 127 */
        _exit(127);
}

/* Moves fd above every slot we are about to fill, close-on-exec. */
static int lift(int fd) {
        return fcntl(fd, F_DUPFD_CLOEXEC, ENTER_FD_FIRST_FREE + 16);
}

/* stdin is /dev/null of the new root; then stdout, stderr and the enter library's fds in their slots,
 * without close-on-exec; every other fd is marked close-on-exec (the status pipe stays usable until
 * execve() closes it). */
static int place_fds(int code_fd, int filter_fd, int ack_fd, int ready_fd, int out_fd, int err_fd) {
        int null_fd;

        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;
        if (dup3(null_fd, STDIN_FILENO, 0) < 0 || dup3(out_fd, STDOUT_FILENO, 0) < 0 ||
            dup3(err_fd, STDERR_FILENO, 0) < 0 || dup3(filter_fd, ENTER_FD_FILTER, 0) < 0 ||
            dup3(code_fd, ENTER_FD_CODE, 0) < 0 || dup3(ack_fd, ENTER_FD_ACK, 0) < 0 ||
            dup3(ready_fd, ENTER_FD_READY, 0) < 0)
                return -errno;
        /* CODE_FD (3) stays free until the enter library fills it from ENTER_FD_CODE. */
        (void) close(CODE_FD);
        if (syscall(SYS_close_range, ENTER_FD_FIRST_FREE, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return -errno;
        return 0;
}

/* The run's own world, before the parent releases us: its clocks (clocks.h), the root, the hostname, and
 * the proxy listener of its network namespace. Does not return on failure. */
static void build_world(const RunPlan *plan, int status_fd, ChildReport *timing) {
        int r;

        if (plan->time_namespace) {
                r = clocks_enter(plan->clock_start_nsec, &clock_offset_usec);
                if (r < 0)
                        child_failed(status_fd, RUN_STEP_CLOCKS, r);
                timing->monotonic_offset_usec = clock_offset_usec; /* the parent converts the ack's time */
        }

        r = rootfs_enter(plan); /* read-only tree, tmpfs /tmp, /dev nodes, pivot_root, old root detached */
        if (r < 0)
                child_failed(status_fd, RUN_STEP_ROOTFS, r);

        if (sethostname("sandbox", strlen("sandbox")) < 0)
                child_failed(status_fd, RUN_STEP_HOSTNAME, -errno);

        if (plan->proxy_sock >= 0) {
                r = hand_over_proxy_listener(plan->proxy_sock);
                if (r < 0)
                        child_failed(status_fd, RUN_STEP_NETWORK, r);
        }
}

void child_run(const RunPlan *plan) {
        ChildReport timing = { .kind = CHILD_REPORT_TIMING };
        int status_fd, sync_fd, code_fd, filter_fd, ack_fd, ready_fd, out_fd, err_fd;
        char byte;
        int r;

        /* If the parent dies, so does the run: PID 1 of the run's namespace takes everything with it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(127);

        /* Its own network namespace, before anything is done in one; the template's fd goes at once. */
        if (plan->netns_template_fd >= 0) {
                r = netns_enter_new(plan->netns_template_fd);
                if (r < 0)
                        child_failed(plan->status_fd, RUN_STEP_NETWORK, r);
                (void) close(plan->netns_template_fd);
        }

        status_fd = lift(plan->status_fd);
        sync_fd = lift(plan->sync_fd);
        code_fd = lift(plan->code_fd);
        filter_fd = lift(plan->filter_fd);
        ack_fd = lift(plan->ack_fd);
        ready_fd = lift(plan->ready_fd);
        out_fd = lift(plan->stdout_fd);
        err_fd = lift(plan->stderr_fd);
        if (status_fd < 0)
                _exit(127);
        if (sync_fd < 0 || code_fd < 0 || filter_fd < 0 || ack_fd < 0 || ready_fd < 0 || out_fd < 0 ||
            err_fd < 0)
                child_failed(status_fd, RUN_STEP_FDS, -errno);

        build_world(plan, status_fd, &timing);
        timing.root_done_usec = monotonic_usec();

        /* The parent moves us into the run's cgroup while we built the root; EOF means it died. */
        if (read(sync_fd, &byte, 1) != 1)
                child_failed(status_fd, RUN_STEP_SYNC, -EPIPE);
        (void) close(sync_fd);
        timing.sync_done_usec = monotonic_usec();

        /* Now that we are inside the run's cgroup, make it the root of what the run can see. */
        if (unshare(CLONE_NEWCGROUP) < 0)
                child_failed(status_fd, RUN_STEP_CGROUPNS, -errno);

        r = place_fds(code_fd, filter_fd, ack_fd, ready_fd, out_fd, err_fd);
        if (r < 0)
                child_failed(status_fd, RUN_STEP_FDS, r);

        r = rlimits_apply(plan); /* as root, so hard limits can be set before the privileges go */
        if (r < 0)
                child_failed(status_fd, RUN_STEP_RLIMITS, r);

        r = creds_drop(plan->uid, plan->gid, plan->no_caps); /* ends with no_new_privs */
        if (r < 0)
                child_failed(status_fd, RUN_STEP_CREDS, r);

        /* The UID change cleared the parent-death signal: set it again, then make sure the parent did
         * not die in between (its end of the status pipe would be gone). */
        r = parent_death_kills_us(status_fd);
        if (r < 0)
                child_failed(status_fd, RUN_STEP_CREDS, r);

        r = signals_reset(); /* no blocked or ignored signal of the worker's reaches the interpreter */
        if (r < 0)
                child_failed(status_fd, RUN_STEP_SIGNALS, r);

        r = seccomp_install(plan->exec_stage); /* last, as in bubblewrap: it only covers what follows */
        if (r < 0)
                child_failed(status_fd, RUN_STEP_SECCOMP, r);

        /* write is in the exec stage (the interpreter needs it); a lost record only loses timings. */
        timing.creds_done_usec = monotonic_usec();
        (void) !write(status_fd, &timing, sizeof(timing));

        execve(plan->exec_path, plan->argv, plan->envp);
        child_failed(status_fd, RUN_STEP_EXEC, -errno);
}
