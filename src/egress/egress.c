/* egress: see egress.h. This file is the relay process's life: its start by the worker (fork, then the
 * wait for its word that it runs unprivileged), what it does before serving (signals, fds, privileges), and
 * its end. What it serves is relay.c. */

#include "egress.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/creds.h"
#include "common/parse.h"
#include "common/time-util.h"
#include "relay.h"
#include "resolver.h"
#include "upstream.h"

#define START_TIMEOUT_MSEC 5000
#define RELAY_UID 65534 /* nobody */
#define RELAY_GID 65534 /* nogroup */

struct EgressRelay {
        pid_t pid;
        int pidfd;
        int denial_fd; /* read end: one byte per denial */
};

int egress_proxy_url_check(const char *url) {
        Upstream u;
        int r;

        r = upstream_parse(url, &u);
        if (r < 0)
                return r;
        upstream_done(&u);
        return 0;
}

/* ------------------------------------------------------------------------- the relay process */

/* libsystemd keeps one unconnected, unbound AF_UNIX datagram socket for the journal and never reopens it;
 * it must survive the closing of fds, or sd_journal_send() would write to whatever gets its number. Such a
 * socket gives nothing socket(2) would not. */
static bool fd_is_unnamed_datagram_socket(int fd) {
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        int domain, type;
        socklen_t l = sizeof(int);

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0 || domain != AF_UNIX)
                return false;
        l = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_DGRAM)
                return false;
        if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0 || len > sizeof(sa_family_t))
                return false;
        len = sizeof(sa);
        return getpeername(fd, (struct sockaddr *) &sa, &len) < 0 && errno == ENOTCONN;
}

/* Closes every fd but stdin/stdout (made /dev/null), stderr (where logging falls back to), the ones in
 * keep, and libsystemd's journal socket. */
static int close_other_fds(const int *keep, size_t n_keep) {
        _cleanup_free_ int *doomed = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        DIR *d;
        int null_fd;

        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;
        if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
                (void) safe_close(null_fd);
                return -errno;
        }
        (void) safe_close(null_fd);

        d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                uint32_t fd;
                bool kept = false;

                if (parse_uint32(de->d_name, &fd) < 0 || fd <= STDERR_FILENO || (int) fd == dirfd(d))
                        continue;
                for (size_t i = 0; i < n_keep; i++)
                        kept = kept || keep[i] == (int) fd;
                if (kept || fd_is_unnamed_datagram_socket((int) fd))
                        continue;
                if (n == allocated) {
                        size_t na = allocated ? allocated * 2 : 64;
                        int *p = reallocarray(doomed, na, sizeof(int));
                        if (!p) {
                                (void) closedir(d);
                                return -ENOMEM;
                        }
                        doomed = p;
                        allocated = na;
                }
                doomed[n++] = (int) fd;
        }
        (void) closedir(d);
        for (size_t i = 0; i < n; i++)
                (void) close(doomed[i]);
        return 0;
}

DEFINE_POINTER_CLEANUP(cap_t, cap_free);

/* fd, moved above stderr if it is not already: stdin and stdout become /dev/null. */
static int lift(int fd) {
        return fd > STDERR_FILENO ? fd : fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
}

/* The fds the relay process keeps: the run's listener, the write end of the denial pipe, and its status
 * pipe to the worker. */
typedef struct RelayFds {
        int listener, denial, status;
} RelayFds;

/* Everything before serving: signals, fds, and the privileges dropped. Returns the signalfd of the
 * resolver, or -errno. */
static int relay_setup(RelayFds *fds, pid_t parent) {
        _cleanup_(cap_freep) cap_t none = NULL;
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t mask;
        int r;

        /* If the worker dies, so does its relay; and it must not have died already. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        if (getppid() != parent)
                return -ESRCH;

        /* The worker's handlers mean nothing here. SIGPIPE: a client that went away is an error return. */
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL); /* EINVAL for glibc's reserved ones only */
        sa.sa_handler = SIG_IGN;
        if (sigaction(SIGPIPE, &sa, NULL) < 0)
                return -errno;
        if (sigemptyset(&mask) < 0 || sigaddset(&mask, RESOLVER_SIGNAL) < 0 ||
            sigprocmask(SIG_SETMASK, &mask, NULL) < 0)
                return -errno;

        fds->listener = lift(fds->listener);
        fds->denial = lift(fds->denial);
        fds->status = lift(fds->status);
        if (fds->listener < 0 || fds->denial < 0 || fds->status < 0)
                return -errno;
        r = close_other_fds((const int[]){ fds->listener, fds->denial, fds->status }, 3);
        if (r < 0)
                return r;
        if (chdir("/") < 0)
                return -errno;

        /* Nobody, without capabilities, bounding set empty, no_new_privs: connecting out needs nothing. No
         * thread exists yet (glibc starts its resolver threads later), so the raw id syscalls of creds.c
         * change the whole process. */
        none = cap_init();
        if (!none)
                return -errno;
        r = creds_drop(RELAY_UID, RELAY_GID, none);
        if (r < 0)
                return r;
        /* Every run's relay is nobody: none may ptrace or read the memory of another. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return -errno;
        /* Changing the effective IDs cleared the parent-death signal: set it again, and check again that
         * the worker did not die in between. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        if (getppid() != parent)
                return -ESRCH;

        if (fcntl(fds->listener, F_SETFL, fcntl(fds->listener, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        return resolver_signal_fd();
}

static _Noreturn void relay_main(Relay *relay, RelayFds fds, pid_t parent) {
        int signal_fd, status;

        signal_fd = relay_setup(&fds, parent);
        status = signal_fd < 0 ? signal_fd : 0;
        (void) !write(fds.status, &status, sizeof(status)); /* if even this fails, the parent sees EOF */
        if (status < 0)
                _exit(EXIT_FAILURE);
        (void) safe_close(fds.status);
        relay_serve(relay, fds.listener, signal_fd, fds.denial);
}

/* ----------------------------------------------------------------------------- the worker side */

static int listener_check(int fd) {
        int v;
        socklen_t l = sizeof(v);

        if (fd < 0)
                return -EBADF;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0)
                return -errno;
        if (v != AF_INET && v != AF_INET6)
                return -EINVAL;
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0)
                return -errno;
        if (v != SOCK_STREAM)
                return -EINVAL;
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0)
                return -errno;
        return v ? 0 : -EINVAL;
}

/* Waits for the relay's word that it runs unprivileged: 0 or its -errno. */
static int relay_wait_ready(int status_fd) {
        struct pollfd p = { .fd = status_fd, .events = POLLIN };
        int status;
        ssize_t n;
        int r;

        do
                r = poll(&p, 1, START_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        n = read(status_fd, &status, sizeof(status));
        if (n < 0)
                return -errno;
        if (n != (ssize_t) sizeof(status))
                return -ECHILD; /* died before saying anything */
        return status > 0 ? -EIO : status;
}

static void relay_kill(pid_t pid, int pidfd) {
        if (pidfd >= 0)
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        else
                (void) kill(pid, SIGKILL); /* not reaped yet: the PID is still ours */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* The arguments' checks: the listener, and a run ID that is safe in a log record. */
static int start_check(int listener_fd, const char *run_id) {
        int r;

        r = listener_check(listener_fd);
        if (r < 0)
                return r;
        for (const char *c = run_id; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
                        return -EINVAL;
        return 0;
}

/* Forks the relay process: returns its PID and pidfd once it runs unprivileged, or -errno with no process
 * left. denial_w is the relay's, closed here in the worker. */
static int relay_fork(Relay *relay, int listener_fd, int denial_w, pid_t *ret_pid, int *ret_pidfd) {
        _cleanup_close_ int status_r = -EBADF, status_w = -EBADF, pidfd = -EBADF, denial = denial_w;
        int status[2], r;
        pid_t parent, pid;

        if (pipe2(status, O_CLOEXEC) < 0)
                return -errno;
        status_r = status[0];
        status_w = status[1];

        /* fork(), not clone(): the relay lives on, mallocs and starts resolver threads, so glibc must know
         * it is a new process. The worker is single-threaded. */
        parent = getpid();
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                relay_main(relay,
                           (RelayFds){ .listener = listener_fd, .denial = denial, .status = status_w },
                           parent);

        status_w = safe_close(status_w);
        denial = safe_close(denial);
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = -errno;
                relay_kill(pid, -EBADF);
                return r;
        }
        r = relay_wait_ready(status_r);
        if (r < 0) {
                relay_kill(pid, pidfd);
                return r;
        }
        *ret_pid = pid;
        *ret_pidfd = TAKE_FD(pidfd);
        return 0;
}

int egress_start(const Config *cfg, int listener_fd, const char *run_id, EgressRelay **ret) {
        _cleanup_(relay_freep) Relay *relay = NULL;
        _cleanup_free_ EgressRelay *e = NULL;
        _cleanup_close_ int denial_r = -EBADF;
        int denial[2], pidfd = -EBADF;
        pid_t pid = 0;
        int r;

        assert(cfg);
        assert(run_id);
        assert(ret);

        r = start_check(listener_fd, run_id);
        if (r < 0)
                return r;
        r = relay_new(cfg, run_id, &relay);
        if (r < 0)
                return r;
        e = calloc(1, sizeof(EgressRelay));
        if (!e)
                return -ENOMEM;
        if (pipe2(denial, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        denial_r = denial[0];
        r = relay_fork(relay, listener_fd, denial[1], &pid, &pidfd);
        if (r < 0)
                return r;

        *e = (EgressRelay){ .pid = pid, .pidfd = pidfd, .denial_fd = TAKE_FD(denial_r) };
        *ret = TAKE_PTR(e);
        return 0;
}

EgressRelay *egress_stop(EgressRelay *relay) {
        if (!relay)
                return NULL;
        relay_kill(relay->pid, relay->pidfd);
        (void) safe_close(relay->pidfd);
        (void) safe_close(relay->denial_fd);
        free(relay);
        return NULL;
}

unsigned egress_denials(const EgressRelay *relay) {
        int n = 0;

        if (!relay || ioctl(relay->denial_fd, FIONREAD, &n) < 0 || n < 0)
                return 0;
        return (unsigned) n;
}

uint64_t egress_cpu_usec(const EgressRelay *relay) {
        struct timespec ts;
        clockid_t clock;

        /* The relay is our child and not reaped before egress_stop(), so its PID is still its own. */
        if (!relay || clock_getcpuclockid(relay->pid, &clock) != 0 || clock_gettime(clock, &ts) < 0)
                return 0;
        return timespec_load(&ts);
}
