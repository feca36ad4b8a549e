/* serve: see serve.h. */

#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/episode.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "protocol/runner-protocol.h"
#include "runner/admit.h"
#include "runner/runner.h"
#include "sandbox/instance.h"
#include "worker/connslot.h"
#include "worker/http.h"
#include "worker/runner-client.h"
#include "worker/worker-filter.h"

/* Workers alive at once; more connections wait in the listen backlog until one ends. As MaxConnections=
 * of units/difysandbox.socket: two Dify API hosts' pools (see below). From three quarters of it on, each
 * new connection makes an idle unauthenticated one close (connslot.h). */
#define WORKERS_MAX 128U
/* Workers one source address may hold. Dify's pool keeps at most 20 keep-alive connections per API process
 * and a host runs a few: 64 holds three such processes and some. As MaxConnectionsPerSource= of
 * units/difysandbox.socket. */
#define WORKERS_PER_SOURCE_MAX 64U
#define ACCEPT_BACKOFF_MSEC 100
/* What a worker may allocate (RLIMIT_DATA: its heap and private mappings), as MemoryMax=128M of
 * difysandbox@.service bounds it under systemd. Its peak was measured at about 4 x code_max + 3 x
 * output_max + 4 MiB (61 MiB with the defaults); the limit is twice that, at least 256 MiB, since address
 * space reserved is not all resident. An allocation past it fails, and that request is answered -500: the
 * host's memory is not a client's to take. */
#define WORKER_DATA_MIN (UINT64_C(256) << 20)
/* How long a stop waits for a worker beyond its longest request (queue wait + run) before SIGKILL. */
#define STOP_GRACE_USEC (UINT64_C(5) * USEC_PER_SEC)

DEFINE_POINTER_CLEANUP(struct addrinfo *, freeaddrinfo);
DEFINE_POINTER_CLEANUP(RunnerClient *, runner_client_free);
DEFINE_POINTER_CLEANUP(Runner *, runner_free);

/* A connection's source address: the peer's IP, without the port. */
typedef struct Source {
        int family;
        uint8_t addr[16];
} Source;

typedef struct Workers {
        pid_t *pids;
        Source *sources; /* of the connection each worker serves, same index */
        size_t n, alloc;
} Workers;

static void workers_done(Workers *w) {
        free(w->pids);
        free(w->sources);
        *w = (Workers){ 0 };
}

static int workers_add(Workers *w, pid_t pid, const Source *source) {
        if (w->n == w->alloc) {
                size_t na = w->alloc ? w->alloc * 2 : 16;
                pid_t *p = reallocarray(w->pids, na, sizeof(pid_t));
                Source *s;

                if (!p)
                        return -ENOMEM;
                w->pids = p;
                s = reallocarray(w->sources, na, sizeof(Source));
                if (!s)
                        return -ENOMEM;
                w->sources = s;
                w->alloc = na;
        }
        w->sources[w->n] = *source;
        w->pids[w->n++] = pid;
        return 0;
}

/* The source of a peer address; an IPv4-mapped IPv6 address is its IPv4 address. */
static Source source_of(const struct sockaddr_storage *ss) {
        Source s = { .family = ss->ss_family };

        if (ss->ss_family == AF_INET)
                memcpy(s.addr, &((const struct sockaddr_in *) ss)->sin_addr, 4);
        else if (ss->ss_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) ss)->sin6_addr;

                if (IN6_IS_ADDR_V4MAPPED(a)) {
                        s.family = AF_INET;
                        memcpy(s.addr, a->s6_addr + 12, 4);
                } else
                        memcpy(s.addr, a->s6_addr, 16);
        }
        return s;
}

static size_t workers_of_source(const Workers *w, const Source *source) {
        size_t n = 0;

        for (size_t i = 0; i < w->n; i++)
                n += w->sources[i].family == source->family &&
                     memcmp(w->sources[i].addr, source->addr, sizeof(source->addr)) == 0;
        return n;
}

/* Reaps the workers that have exited. Only our own children are waited for, each by its PID, which
 * stays ours until it is reaped, so a signal sent by PID never reaches a stranger. */
static void workers_reap(Workers *w) {
        for (size_t i = 0; i < w->n;) {
                int status;
                pid_t p = waitpid(w->pids[i], &status, WNOHANG);

                if (p == 0) {
                        i++;
                        continue;
                }
                if (p > 0 && WIFSIGNALED(status) && WTERMSIG(status) != SIGTERM &&
                    WTERMSIG(status) != SIGINT)
                        log_warning("Worker %i was killed by signal %i", (int) p, WTERMSIG(status));
                /* reaped, or not our child (ECHILD): forget it */
                w->n--;
                w->pids[i] = w->pids[w->n];
                w->sources[i] = w->sources[w->n];
        }
}

static void workers_signal(const Workers *w, int sig) {
        for (size_t i = 0; i < w->n; i++)
                (void) kill(w->pids[i], sig); /* ours and not yet reaped, so still this process */
}

/* Splits "host:port", "[v6]:port" or ":port" (*ret_host NULL: every address). */
static int address_split(const char *addr, char **ret_host, uint16_t *ret_port) {
        _cleanup_free_ char *host = NULL;
        const char *port;
        uint32_t n;

        if (addr[0] == '[') {
                const char *end = strchr(addr, ']');

                if (!end || end == addr + 1 || end[1] != ':')
                        return -EINVAL;
                host = strndup(addr + 1, (size_t) (end - addr - 1));
                if (!host)
                        return -ENOMEM;
                port = end + 2;
        } else {
                const char *colon = strchr(addr, ':');

                if (!colon || strchr(colon + 1, ':'))
                        return -EINVAL; /* no port, or IPv6 without brackets */
                if (colon > addr) {
                        host = strndup(addr, (size_t) (colon - addr));
                        if (!host)
                                return -ENOMEM;
                }
                port = colon + 1;
        }
        if (parse_uint32(port, &n) < 0 || n > 65535)
                return -EINVAL;
        *ret_host = TAKE_PTR(host);
        *ret_port = (uint16_t) n;
        return 0;
}

static void address_format(const struct sockaddr_storage *ss, char *buf, size_t size) {
        char text[INET6_ADDRSTRLEN] = "?";

        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) ss;
                (void) inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
                (void) snprintf(buf, size, "[%s]:%u", text, (unsigned) ntohs(in6->sin6_port));
        } else {
                const struct sockaddr_in *in = (const struct sockaddr_in *) ss;
                (void) inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
                (void) snprintf(buf, size, "%s:%u", text, (unsigned) ntohs(in->sin_port));
        }
}

static int listen_on(const struct addrinfo *ai, bool dual_stack) {
        _cleanup_close_ int fd = -EBADF;
        int one = 1, v6only = !dual_stack;

        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return -errno;
        if (ai->ai_family == AF_INET6 &&
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
                return -errno;
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* Listens on addr: its first address that works, IPv6 first when no host is given (and then on both
 * families). Logs why it cannot. */
static int listen_open(const char *addr, int *ret_fd, char *ret_bound, size_t bound_size) {
        _cleanup_(freeaddrinfop) struct addrinfo *list = NULL;
        _cleanup_free_ char *host = NULL;
        struct addrinfo hints = { .ai_family = AF_UNSPEC,
                                  .ai_socktype = SOCK_STREAM,
                                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
        struct sockaddr_storage ss = { 0 };
        socklen_t ss_len = sizeof(ss);
        char port_text[6];
        uint16_t port;
        int fd = -EADDRNOTAVAIL, r;

        r = address_split(addr, &host, &port);
        if (r == -ENOMEM)
                return log_error_errno(r, "Cannot parse the listen address: %m");
        if (r < 0)
                return log_error_errno(
                        r, "Invalid listen address '%s': expected HOST:PORT, [IPV6]:PORT or :PORT", addr);
        (void) snprintf(port_text, sizeof(port_text), "%u", (unsigned) port);
        r = getaddrinfo(host, port_text, &hints, &list);
        if (r != 0)
                return log_error_errno(r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL, "Cannot resolve '%s': %s",
                                       addr, gai_strerror(r));

        for (int pass = 0; pass < 2 && fd < 0; pass++)
                for (const struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next) {
                        if ((pass == 0) != (ai->ai_family == AF_INET6))
                                continue;
                        fd = listen_on(ai, /* dual_stack= */ !host);
                }
        if (fd < 0)
                return log_error_errno(fd, "Cannot listen on '%s': %m", addr);

        if (getsockname(fd, (struct sockaddr *) &ss, &ss_len) < 0) {
                r = -errno;
                (void) safe_close(fd);
                return log_error_errno(r, "Cannot get the address of the listening socket: %m");
        }
        address_format(&ss, ret_bound, bound_size);
        *ret_fd = fd;
        return 0;
}

/* Errors that concern only the connection being accepted (accept(2): pending network errors are passed
 * on), or no connection at all. */
static bool accept_error_transient(int error) {
        switch (error) {
        case EAGAIN:
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
        case EPERM:
        case ENETDOWN:
        case ENOPROTOOPT:
        case EHOSTDOWN:
        case ENONET:
        case EHOSTUNREACH:
        case EOPNOTSUPP:
        case ENETUNREACH:
                return true;
        default:
                return false;
        }
}

/* What every forked process of serve's must not keep of the parent's. */
typedef struct ServeFds {
        int listen_fd, signal_fd, handoff_fd;
        Instance *instance;   /* our claim: its registry file, root's, open for writing and flock()ed */
        const sigset_t *mask; /* the signal mask to restore */
        uid_t worker_uid;
        gid_t worker_gid;
        const SeccompProgram *worker_filter; /* compiled once; each worker loads it with its own PID */
} ServeFds;

/* The worker's identity, as difysandbox@.service gives it under systemd: worker_user, no supplementary
 * groups, no capabilities (setuid() from root to another UID clears them all), no_new_privs. */
static int worker_drop_privileges(const ServeFds *fds) {
        if (setgroups(0, NULL) < 0 || setresgid(fds->worker_gid, fds->worker_gid, fds->worker_gid) < 0 ||
            setresuid(fds->worker_uid, fds->worker_uid, fds->worker_uid) < 0)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

static rlim_t worker_data_max(const Config *cfg) {
        uint64_t peak = 4 * cfg->code_max + 3 * cfg->output_max + (UINT64_C(4) << 20);

        return 2 * peak > WORKER_DATA_MIN ? (rlim_t) (2 * peak) : (rlim_t) WORKER_DATA_MIN;
}

/* In the forked worker: the connection and its line to the runner are all it keeps of us. */
static void worker_run(const Config *cfg, int conn_fd, int runner_fd, const ServeFds *fds, pid_t parent)
        __attribute__((noreturn));
static void worker_run(const Config *cfg, int conn_fd, int runner_fd, const ServeFds *fds, pid_t parent) {
        _cleanup_(runner_client_freep) RunnerClient *runner = NULL;
        Config copy = *cfg, *own = &copy; /* its fields point into this process's copy of serve's memory */
        ConnSlot *slot = NULL;            /* held until _exit() */
        int r;

        http_note_process_start();
        (void) safe_close(fds->listen_fd);
        (void) safe_close(fds->signal_fd);
        (void) safe_close(fds->handoff_fd);
        (void) instance_free(fds->instance); /* a forked copy: closes the fd, leaves serve's entry */
        if (sigprocmask(SIG_SETMASK, fds->mask, NULL) < 0)
                _exit(EXIT_FAILURE);
        r = worker_drop_privileges(fds);
        if (r < 0) {
                log_error_errno(r, "Cannot drop the worker's privileges: %m");
                _exit(EXIT_FAILURE);
        }
        if (setrlimit(RLIMIT_DATA, &(struct rlimit){ worker_data_max(cfg), worker_data_max(cfg) }) < 0) {
                log_error_errno(-errno, "Cannot limit the worker's memory: %m");
                _exit(EXIT_FAILURE);
        }
        /* A keep-alive worker must not go on serving when serve is gone (SIGKILLed): nobody would stop
         * it. Set after setuid(), which clears it; the parent may have died before this line. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(EXIT_FAILURE);
        r = runner_client_new(NULL, runner_fd, &runner);
        if (r < 0)
                _exit(EXIT_FAILURE);
        /* This process's copy of serve's configuration: app.key becomes a digest, and the index's and
         * the proxies' URLs are zeroed, as difysandbox-worker holds them (config-file.h). */
        r = config_scrub_for_worker(own);
        if (r < 0) {
                log_error_errno(r, "Cannot make the digest of app.key: %m");
                _exit(EXIT_FAILURE);
        }
        r = connslot_take(cfg->state_dir, WORKERS_MAX, &slot); /* before the filter, as the worker's */
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot count the live connections, so idle unauthenticated ones cannot "
                                  "be asked to make room: %m");
        r = worker_file_size_limit(cfg->code_max); /* as difysandbox-worker, worker-filter.h */
        if (r < 0) {
                log_error_errno(r, "Cannot limit the size of the files the worker writes: %m");
                _exit(EXIT_FAILURE);
        }
        /* As difysandbox-worker does, before the first byte of the client's. */
        r = worker_filter_load(fds->worker_filter);
        if (r < 0) {
                log_error_errno(r, "Cannot load the worker's system call filter: %m");
                _exit(EXIT_FAILURE);
        }
        r = http_serve_connection(own, 0, false, runner, slot, conn_fd);
        _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

/* Hands the runner its end of a new connection for a worker; returns the worker's end. */
static int runner_line_open(int handoff_fd, int *ret_worker_end) {
        int sv[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        r = runner_send(handoff_fd, "c", 1, sv[0]);
        (void) close(sv[0]);
        if (r < 0) {
                (void) close(sv[1]);
                return r;
        }
        *ret_worker_end = sv[1];
        return 0;
}

/* Accepting or forking fails (out of fds, memory or processes): such a state lasts, so it is logged once
 * per episode, not once every ACCEPT_BACKOFF_MSEC (issue 24). Returns 1: accepting pauses. */
static int accept_trouble(Episode *trouble, int error, const char *what) {
        if (episode_event(trouble, now(CLOCK_MONOTONIC)))
                log_warning_errno(error, "%s, pausing for %i ms at a time until it works again: %m", what,
                                  ACCEPT_BACKOFF_MSEC);
        return 1;
}

/* Accepts one connection and forks its worker. Returns 1 when accepting should pause (out of fds or
 * memory), 0 otherwise. */
static int accept_one(const Config *cfg, const ServeFds *fds, Workers *w, Episode *trouble) {
        _cleanup_close_ int conn_fd = -EBADF, runner_fd = -EBADF;
        int listen_fd = fds->listen_fd;
        struct sockaddr_storage ss = { 0 };
        socklen_t ss_len = sizeof(ss);
        pid_t pid, parent = getpid();
        Source source;
        int r;

        conn_fd = accept4(listen_fd, (struct sockaddr *) &ss, &ss_len, SOCK_CLOEXEC);
        if (conn_fd < 0) {
                if (accept_error_transient(errno))
                        return 0;
                return accept_trouble(trouble, -errno, "Cannot accept a connection");
        }

        source = source_of(&ss);
        if (workers_of_source(w, &source) >= WORKERS_PER_SOURCE_MAX) {
                /* Closed at once, not queued: the capacity left is for other peers. Debug only, since a
                 * flood would flood the log too. */
                log_debug("Refusing a connection: its source holds %u connections already",
                          WORKERS_PER_SOURCE_MAX);
                return 0;
        }

        r = runner_line_open(fds->handoff_fd, &runner_fd);
        if (r < 0)
                return accept_trouble(trouble, r, "Cannot open a line to the runner, dropping connections");
        pid = fork();
        if (pid < 0)
                return accept_trouble(trouble, -errno, "Cannot fork a worker, dropping connections");
        if (pid == 0)
                worker_run(cfg, TAKE_FD(conn_fd), TAKE_FD(runner_fd), fds, parent);

        r = workers_add(w, pid, &source);
        if (r < 0) {
                log_error_errno(r, "Cannot track worker %i, killing it: %m", (int) pid);
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return 1;
        }
        if (trouble->active)
                log_info("Accepting connections again after %" PRIu64 " failures", episode_end(trouble));
        return 0;
}

/* Reads the pending signals; returns the last stop signal seen, 0 if none. Reaps on SIGCHLD. */
static int signals_read(int signal_fd, Workers *w) {
        struct signalfd_siginfo si;
        int stop = 0;

        while (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                        stop = (int) si.ssi_signo;
        workers_reap(w); /* SIGCHLD coalesces: look at every worker each time */
        return stop;
}

/* Stops: no more connections, SIGTERM to each worker (a request in progress finishes, an idle
 * connection ends), SIGKILL to those still there after the longest a request can take, or at once on
 * a second stop signal. */
static void workers_stop(const Config *cfg, int signal_fd, Workers *w) {
        uint64_t deadline =
                now(CLOCK_MONOTONIC) + admit_wait_usec(cfg) + cfg->worker_timeout_usec + STOP_GRACE_USEC;

        if (w->n > 0)
                log_info("Stopping: waiting for %zu workers", w->n);
        workers_signal(w, SIGTERM);
        while (w->n > 0) {
                struct pollfd pfd = { .fd = signal_fd, .events = POLLIN };
                uint64_t now_usec = now(CLOCK_MONOTONIC);

                if (now_usec >= deadline) {
                        log_warning("Killing %zu workers that did not finish in time", w->n);
                        break;
                }
                if (poll(&pfd, 1, (int) ((deadline - now_usec) / 1000 + 1)) < 0 && errno != EINTR) {
                        log_warning_errno(-errno, "Cannot wait for the workers, killing them: %m");
                        break;
                }
                if (signals_read(signal_fd, w) != 0 && w->n > 0) {
                        log_warning("Second stop signal: killing %zu workers", w->n);
                        break;
                }
        }
        workers_signal(w, SIGKILL);
        for (size_t i = 0; i < w->n; i++)
                (void) waitpid(w->pids[i], NULL, 0);
        w->n = 0;
}

/* The runner, as serve's first child: root, as difysandbox-runner.service is. It gets a copy of cfg of
 * its own (it owns and may replace what it is given) and ends when the hand-off socket closes. */
static int runner_start(const Config *cfg, const ServeFds *fds, int handoff_runner_end, pid_t *ret_pid) {
        pid_t parent = getpid(), pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                _cleanup_(runner_freep) Runner *runner = NULL;
                Config *copy;
                int r;

                (void) safe_close(fds->listen_fd);
                (void) safe_close(fds->signal_fd);
                (void) safe_close(fds->handoff_fd);
                (void) instance_free(fds->instance); /* the runner registers its own claim */
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent ||
                    sigprocmask(SIG_SETMASK, fds->mask, NULL) < 0)
                        _exit(EXIT_FAILURE);
                copy = malloc(sizeof(*copy));
                if (!copy)
                        _exit(EXIT_FAILURE);
                *copy = *cfg; /* this process's own copy of every string: it never returns to the caller */
                r = runner_new(copy, /* reloadable= */ false, &runner);
                if (r >= 0)
                        r = runner_add_handoff(runner, handoff_runner_end);
                if (r >= 0)
                        r = runner_run(runner);
                runner = runner_free(runner); /* its slots reap their runs: _exit() runs no cleanup */
                _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        *ret_pid = pid;
        return 0;
}

/* A new hand-off socket and a new runner behind it. */
static int runner_restart(const Config *cfg, ServeFds *fds, int *handoff_fd, pid_t *ret_pid) {
        int sv[2], r;

        *handoff_fd = safe_close(*handoff_fd);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return log_error_errno(-errno, "Cannot make the runner's hand-off socket: %m");
        *handoff_fd = fds->handoff_fd = sv[0];
        r = runner_start(cfg, fds, sv[1], ret_pid);
        (void) close(sv[1]);
        if (r < 0)
                return log_error_errno(r, "Cannot start the runner: %m");
        return 0;
}

static void runner_stop(pid_t pid) {
        if (pid <= 0)
                return;
        /* The hand-off socket is closed by now, which ends it; SIGTERM in case it is busy elsewhere. */
        (void) kill(pid, SIGTERM); /* our child, not yet reaped */
        (void) waitpid(pid, NULL, 0);
}

/* The worker user's IDs. serve refuses to start without it, rather than serve HTTP as root. */
static int worker_user_resolve(const Config *cfg, ServeFds *fds) {
        struct passwd *pw;

        errno = 0;
        pw = getpwnam(cfg->worker_user);
        if (!pw)
                return log_error_errno(
                        errno > 0 ? -errno : -ESRCH,
                        "User '%s' (worker_user) does not exist: create it with "
                        "`systemd-sysusers difysandbox.conf`, or name another unprivileged user",
                        cfg->worker_user);
        if (pw->pw_uid == 0)
                return log_error_errno(-EPERM, "worker_user '%s' is root: workers must not be",
                                       cfg->worker_user);
        fds->worker_uid = pw->pw_uid;
        fds->worker_gid = pw->pw_gid;
        return 0;
}

/* The workers' count of live connections (connslot.h), theirs to write. Without it they serve as before,
 * only unable to make idle unauthenticated connections close for new ones. */
static void connections_dir_prepare(const Config *cfg, const ServeFds *fds) {
        int r = connslot_dir_prepare(cfg->state_dir, fds->worker_uid, fds->worker_gid);

        if (r < 0)
                log_warning_errno(r,
                                  "Cannot make %s/connections for the workers, so idle unauthenticated "
                                  "connections cannot be asked to make room: %m",
                                  cfg->state_dir);
}

/* What every worker gets from serve: its user, its system call filter compiled once, the directory where
 * it counts the live connections. */
static int workers_prepare(const Config *cfg, ServeFds *fds, SeccompProgram **ret_filter) {
        int r;

        r = worker_user_resolve(cfg, fds);
        if (r < 0)
                return r;
        r = worker_filter_compile(ret_filter);
        if (r < 0)
                return log_error_errno(r, "Cannot compile the workers' system call filter: %m");
        fds->worker_filter = *ret_filter;
        connections_dir_prepare(cfg, fds);
        return 0;
}

/* The line the tests and operators read to know serve is up, and with what. */
static void log_serving(const Config *cfg, const char *bound) {
        log_info("Serving on %s: max_workers=%" PRIu32 " max_requests=%" PRIu32 " worker_timeout=%" PRIu64
                 ".%03" PRIu64 "s enable_network=%s enable_preload=%s",
                 bound, cfg->max_workers, cfg->max_requests, cfg->worker_timeout_usec / USEC_PER_SEC,
                 cfg->worker_timeout_usec % USEC_PER_SEC / 1000, cfg->enable_network ? "yes" : "no",
                 cfg->enable_preload ? "yes" : "no");
}

DEFINE_POINTER_CLEANUP(Instance *, instance_free);

/* Our claim on the UID range (instance.h), before the runner starts: a range that overlaps another live
 * instance's refuses the start here, with the reason, rather than leave a runner failing its set-up. */
static int instance_claim(const Config *cfg, Instance **ret) {
        _cleanup_free_ char *reason = NULL;
        int r;

        r = instance_register(NULL, cfg->state_dir, cfg->uid_min, cfg->uid_max, ret, &reason);
        if (r == -EADDRINUSE)
                return log_error_errno(r, "Refusing to start: %s", reason ? reason : "UID range in use");
        if (r < 0)
                return log_error_errno(r, "Cannot register this instance in " INSTANCE_REGISTRY_DIR ": %m");
        return 0;
}

/* SIGCHLD, SIGTERM and SIGINT arrive on a signalfd; *old_mask is what to restore on the way out. */
static int signals_open(sigset_t *old_mask, int *ret_fd) {
        sigset_t handled;
        int fd, r;

        if (sigemptyset(&handled) < 0 || sigaddset(&handled, SIGCHLD) < 0 ||
            sigaddset(&handled, SIGTERM) < 0 || sigaddset(&handled, SIGINT) < 0 ||
            sigprocmask(SIG_BLOCK, &handled, old_mask) < 0)
                return log_error_errno(-errno, "Cannot block signals: %m");
        fd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0) {
                r = log_error_errno(-errno, "Cannot create a signalfd: %m");
                (void) sigprocmask(SIG_SETMASK, old_mask, NULL);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int serve_main(Config *cfg, const char *listen_addr) {
        _cleanup_close_ int listen_fd = -EBADF, signal_fd = -EBADF, handoff_fd = -EBADF;
        _cleanup_(workers_done) Workers workers = { 0 };
        _cleanup_(instance_freep) Instance *instance = NULL;
        _cleanup_(seccomp_program_freep) SeccompProgram *worker_filter = NULL;
        char bound[INET6_ADDRSTRLEN + 8];
        sigset_t old_mask;
        ServeFds fds = { .mask = &old_mask };
        Episode trouble = { 0 };
        bool backoff = false;
        pid_t runner_pid = 0;
        int r = 0, stop = 0;

        /* A run that dies early closes its code pipe: that must be EPIPE in the worker, not its end. */
        (void) signal(SIGPIPE, SIG_IGN);

        r = workers_prepare(cfg, &fds, &worker_filter);
        if (r < 0)
                return r;
        r = instance_claim(cfg, &instance);
        if (r < 0)
                return r;
        fds.instance = instance;
        r = listen_open(listen_addr, &listen_fd, bound, sizeof(bound));
        if (r < 0)
                return r;

        r = signals_open(&old_mask, &signal_fd);
        if (r < 0)
                return r;
        fds.listen_fd = listen_fd;
        fds.signal_fd = signal_fd;
        r = runner_restart(cfg, &fds, &handoff_fd, &runner_pid);
        if (r < 0) {
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
                return r;
        }

        log_serving(cfg, bound);

        while (stop == 0) {
                struct pollfd pfd[2] = {
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = listen_fd, .events = !backoff && workers.n < WORKERS_MAX ? POLLIN : 0 },
                };

                if (poll(pfd, 2, backoff ? ACCEPT_BACKOFF_MSEC : -1) < 0 && errno != EINTR) {
                        r = log_error_errno(-errno, "Cannot wait for connections: %m");
                        break;
                }
                backoff = false;
                if (pfd[0].revents & POLLIN) {
                        stop = signals_read(signal_fd, &workers);
                        if (stop == 0 && waitpid(runner_pid, NULL, WNOHANG) == runner_pid) {
                                /* As systemd's Restart=always: the runs in flight are lost (their workers
                                 * answer -500 naming the runner and close), the next connections go to a
                                 * new runner. */
                                log_warning("The runner (PID %i) ended; starting a new one",
                                            (int) runner_pid);
                                runner_pid = 0;
                                r = runner_restart(cfg, &fds, &handoff_fd, &runner_pid);
                                if (r < 0)
                                        break;
                        }
                }
                if (stop == 0 && (pfd[1].revents & POLLIN))
                        backoff = accept_one(cfg, &fds, &workers, &trouble) > 0;
        }
        if (stop != 0)
                log_info("Received %s, no longer accepting on %s", strsignal(stop), bound);

        listen_fd = safe_close(listen_fd);
        workers_stop(cfg, signal_fd, &workers);
        handoff_fd = safe_close(handoff_fd);
        runner_stop(runner_pid);
        (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return stop != 0 ? 0 : r;
}
