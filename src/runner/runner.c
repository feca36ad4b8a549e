/* runner: see runner.h. */

#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "admit.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/episode.h"
#include "common/generation.h"
#include "common/log.h"
#include "common/packages.h"
#include "common/parse.h"
#include "common/stats.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "cpu-idle.h"
#include "fd-budget.h"
#include "handler.h"
#include "languages.h"
#include "pool.h"
#include "protocol/runner-protocol.h"
#include "sandbox/run.h"
#include "slot.h"

/* How often the loop looks for a new configuration or dependency generation while no request comes. */
#define CHECK_INTERVAL_USEC (UINT64_C(1) * USEC_PER_SEC)
/* After a slot failed to prepare, the next try waits this long, doubling up to the maximum. */
#define BACKOFF_MIN_USEC (UINT64_C(1) * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (UINT64_C(60) * USEC_PER_SEC)
/* Runs are "coming" until this long after the last request. Meanwhile the pool refills with light slots
 * (the interpreter started, nothing imported: tens of ms of CPU, ready for the next request of a burst);
 * the preload imports (a third of a second of CPU for pandas) wait for a pause, when light slots are
 * replaced by preloaded ones. The gaps between Dify's code nodes (an LLM call, a user) are far longer. */
#define REFILL_QUIET_USEC (UINT64_C(100) * 1000)
/* Preloads are worth their CPU time (a third of a second for pandas) and memory while code uses them: until
 * a language's first run (an operator who lists modules expects them at once), then for this long after a
 * run whose code named one (preload-match.h). Without it, every pause made preloaded runs that `print(1)`
 * then spent, and the pool cost throughput at one client (issue 25). */
#define PRELOAD_DEMAND_USEC (UINT64_C(3600) * USEC_PER_SEC)
/* How long a stopping runner waits for a pool slot to kill and reap its prepared run. */
#define STOP_GRACE_USEC (UINT64_C(5) * USEC_PER_SEC)
/* A draining runner (SIGTERM) waits for its runs in flight the longest one can take (queue_timeout plus
 * worker_timeout) plus this, for the set-up before and the scope's teardown after; then it stops them.
 * systemd is told the whole bound (EXTEND_TIMEOUT_USEC) plus STOP_GRACE_USEC, so that its SIGKILL comes
 * only after the runner's own end. */
#define DRAIN_MARGIN_USEC (UINT64_C(10) * USEC_PER_SEC)
/* Connections one peer process may hold (SO_PEERCRED's PID at connect()). A worker holds one, and two for
 * a moment when it connects again before its old one's end was read here; no worker can fork (its system
 * call filter), so many connections from one PID are an attack on the descriptor table, not a load. The
 * UID says nothing here: every worker is difysandbox-worker. The total is bounded by connections_max
 * (fd-budget.h), from RLIMIT_NOFILE. */
#define CONNECTIONS_PER_PEER_MAX 4U
/* accept() failing with nothing to shed (or for another reason): the listener rests this long, not spins. */
#define ACCEPT_PAUSE_USEC (UINT64_C(100) * 1000)
/* An episode of refused or shed connections is summed up once it has been quiet this long. */
#define EPISODE_QUIET_USEC (UINT64_C(10) * USEC_PER_SEC)

typedef struct Conn Conn;

/* Kinds of pressure on the connections, each logged once per episode (episode.h). */
typedef enum Pressure {
        PRESSURE_NO_FDS,   /* accept()'s EMFILE or ENFILE, a message's fd dropped with MSG_CTRUNC */
        PRESSURE_ACCEPT,   /* accept() failing otherwise */
        PRESSURE_AT_CAP,   /* connections_max reached */
        PRESSURE_PER_PEER, /* a process past CONNECTIONS_PER_PEER_MAX */
        PRESSURE_STRANGER, /* a peer neither root nor worker_user */
        _PRESSURE_MAX,
} Pressure;

/* The closing line of an episode: "... after N <this>". */
static const char *const pressure_summary[_PRESSURE_MAX] = {
        [PRESSURE_NO_FDS] = "times out of file descriptors",
        [PRESSURE_ACCEPT] = "failed accept()s",
        [PRESSURE_AT_CAP] = "connections past the most RLIMIT_NOFILE leaves room for",
        [PRESSURE_PER_PEER] = "connections refused to processes that held too many",
        [PRESSURE_STRANGER] = "connections refused to processes of other users",
};

struct Runner {
        sd_event *event;
        Config *cfg;
        bool reloadable;
        uint64_t config_generation;
        Stats *stats;
        Admit *admit;
        Sandbox *sandbox;
        Pool pool;
        uid_t worker_uid; /* (uid_t) -1: no such user, only root may connect */
        sd_event_source *listener, *handoff, *timer, *resume, *drain_deadline;
        bool draining; /* stopping: no new connection or prepared run, the runs in flight finish */
        Conn *conns, *conns_last; /* oldest first */
        unsigned n_conns, connections_max;
        Episode pressure[_PRESSURE_MAX];
        uint64_t backoff_usec, prepare_not_before;   /* CLOCK_MONOTONIC */
        uint64_t last_run_usec;                      /* when the last run request came */
        bool ran[_LANGUAGE_MAX];                     /* a run of the language has come */
        uint64_t preload_wanted_usec[_LANGUAGE_MAX]; /* the last run whose code named a preload; 0 none */
        CpuIdle cpu_idle;                            /* whether preloading may take CPU time now */
        sigset_t old_mask;
};

struct Conn {
        Runner *runner;
        Conn *prev, *next;
        int fd;
        sd_event_source *io;
        pid_t handler; /* 0 while the connection waits for its next request */
        pid_t peer;    /* SO_PEERCRED's PID of an accepted connection; -1: handed over by serve */
};

DEFINE_POINTER_CLEANUP(Runner *, runner_free);
DEFINE_POINTER_CLEANUP(Sandbox *, sandbox_free);

static HandlerContext runner_context(const Runner *r) {
        return (HandlerContext){
                .cfg = r->cfg,
                .sandbox = r->sandbox,
                .admit = r->admit,
                .stats = r->stats,
                .config_generation = r->config_generation,
        };
}

/* ---- connections ---- */

/* One event of pressure p: true when it begins an episode, whose one warning the caller logs. */
static bool pressure_begins(Runner *r, Pressure p) {
        return episode_event(&r->pressure[p], now(CLOCK_MONOTONIC));
}

static Conn *conn_free(Conn *c) {
        if (!c)
                return NULL;
        Runner *r = c->runner;
        if (c->prev)
                c->prev->next = c->next;
        else
                r->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                r->conns_last = c->prev;
        r->n_conns--;
        sd_event_source_disable_unref(c->io);
        (void) safe_close(c->fd);
        /* A handler still serving it keeps its own copy of the socket and finishes; the pool slot's
         * userdata is cleared by the caller. */
        free(c);
        return NULL;
}

/* Closes the oldest connection that waits for its next request with none sent yet, to make room for a new
 * one. A worker of difysandbox-runner.socket connects again at its next request (runner-client.c); one of
 * serve's cannot, and answers that the runner is unreachable. A request sent in the instant between the
 * look and the close is lost, and its worker answers an error naming the runner. keep (may be NULL) is
 * never the one. Returns whether one went. */
static bool conn_shed(Runner *r, const Conn *keep) {
        for (Conn *c = r->conns; c; c = c->next) {
                struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

                if (c->handler != 0 || c == keep)
                        continue;
                if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)) == 0)
                        continue; /* a request waits on it */
                conn_free(c);
                return true;
        }
        return false;
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Takes fd (peer: see Conn). At connections_max, the oldest idle connection makes room, or fd is refused. */
static int conn_new(Runner *r, int fd, pid_t peer) {
        Conn *c;
        int e;

        if (r->n_conns >= r->connections_max) {
                bool shed = conn_shed(r, NULL);

                if (pressure_begins(r, PRESSURE_AT_CAP))
                        log_warning(
                                "%u worker connections are open, the most RLIMIT_NOFILE leaves room for: "
                                "%s",
                                r->n_conns + shed,
                                shed ? "closing idle ones, oldest first, for new ones"
                                     : "refusing new ones while none is idle");
                if (!shed) {
                        (void) safe_close(fd);
                        return -EMFILE;
                }
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                (void) safe_close(fd);
                return -ENOMEM;
        }
        *c = (Conn){ .runner = r, .fd = fd, .peer = peer, .prev = r->conns_last };
        e = sd_event_add_io(r->event, &c->io, fd, EPOLLIN, on_conn, c);
        if (e < 0) {
                (void) safe_close(fd);
                free(c);
                return e;
        }
        if (r->conns_last)
                r->conns_last->next = c;
        else
                r->conns = c;
        r->conns_last = c;
        r->n_conns++;
        return 0;
}

/* A descriptor could not be had (accept()'s EMFILE or ENFILE; a message's fd dropped): one warning per
 * episode, and the oldest idle connection but keep goes so that the next one fits. Returns whether one
 * went. */
static bool out_of_fds(Runner *r, const Conn *keep, int error, const char *what) {
        if (pressure_begins(r, PRESSURE_NO_FDS))
                log_warning_errno(
                        error,
                        "Out of file descriptors with %u worker connections open (%s: %m); closing "
                        "idle worker connections, oldest first",
                        r->n_conns, what);
        return conn_shed(r, keep);
}

/* ---- children ---- */

/* In a child of the loop: nothing of the loop's, no other connection or slot, the old signal mask. A
 * connection or slot socket kept open here would hide its end from the other side. */
static void child_detach(Runner *r, int keep_a, int keep_b) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(EXIT_FAILURE);
        for (Conn *c = r->conns; c; c = c->next)
                if (c->fd != keep_a && c->fd != keep_b)
                        (void) close(c->fd);
        for (size_t i = 0; i < r->pool.n_slots; i++) {
                int fd = r->pool.slots[i].control_fd;
                if (fd >= 0 && fd != keep_a && fd != keep_b)
                        (void) close(fd);
        }
        if (r->listener)
                (void) close(sd_event_source_get_io_fd(r->listener)); /* even while it rests */
        if (r->handoff)
                (void) close(sd_event_source_get_io_fd(r->handoff));
        if (sigprocmask(SIG_SETMASK, &r->old_mask, NULL) < 0)
                _exit(EXIT_FAILURE);
}

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata);
static int on_slot_control(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static void pool_refill(Runner *r);
static void drain_check(Runner *r);

/* Forks a child of the pool table; in the child, returns 0 after child_detach(). */
static pid_t fork_tracked(Runner *r, PoolSlotState state, Language language, int control_fd, int keep_a,
                          int keep_b, PoolSlot **ret_slot) {
        pid_t parent = getpid(), pid;
        PoolSlot *slot;
        int e;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                child_detach(r, keep_a, keep_b);
                if (getppid() != parent)
                        _exit(EXIT_FAILURE); /* the runner died before PR_SET_PDEATHSIG took */
                /* A handler logs its run record and exits: journald attributes it by the runner. */
                log_set_object_pid(parent);
                return 0;
        }
        slot = pool_add(&r->pool, pid, state, language, control_fd);
        if (!slot) {
                (void) kill(pid, SIGKILL); /* our child, not yet reaped */
                (void) waitpid(pid, NULL, 0);
                return -ENOMEM;
        }
        e = sd_event_add_child(r->event, (sd_event_source **) &slot->child_source, pid, WEXITED, on_child,
                               r);
        if (e < 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                pool_remove(&r->pool, pid);
                return e;
        }
        *ret_slot = slot;
        return pid;
}

static void slot_retire(PoolSlot *slot) {
        slot->state = POOL_SLOT_RETIRED;
        slot->control_source = sd_event_source_disable_unref(slot->control_source);
        slot->control_fd = safe_close(slot->control_fd); /* the slot sees the end, kills its run, exits */
}

/* A child ended: its slot goes, the connection it served reads its next request, the pool refills. */
static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Runner *r = userdata;
        PoolSlot *slot = pool_find(&r->pool, si->si_pid);

        if (!slot)
                return 0;
        if (slot->state == POOL_SLOT_PREPARING) {
                /* It never became ready: back off, so that a broken runtime tree is not a fork loop. */
                r->backoff_usec = r->backoff_usec ? r->backoff_usec * 2 : BACKOFF_MIN_USEC;
                if (r->backoff_usec > BACKOFF_MAX_USEC)
                        r->backoff_usec = BACKOFF_MAX_USEC;
                r->prepare_not_before = now(CLOCK_MONOTONIC) + r->backoff_usec;
                log_debug("A %s slot of the pool failed to prepare; next try in %" PRIu64 " ms",
                          language_to_string(slot->language), r->backoff_usec / 1000);
        }
        Conn *c = slot->userdata;
        if (c && si->si_code == CLD_EXITED && si->si_status == EXIT_SUCCESS) {
                c->handler = 0;
                (void) sd_event_source_set_enabled(c->io, SD_EVENT_ON);
        } else if (c) {
                /* It died without answering, or could not answer: closing our copy of the connection
                 * (the last one now) tells the worker, which answers -500 naming the runner. */
                log_warning("A handler (PID %i) of a %s run ended without an answer (%s %i)",
                            (int) si->si_pid, language_to_string(slot->language),
                            si->si_code == CLD_EXITED ? "exit status" : "signal", si->si_status);
                conn_free(c);
        }
        sd_event_source_disable_unref(slot->control_source);
        (void) safe_close(slot->control_fd);
        sd_event_source_disable_unref(s);
        pool_remove(&r->pool, si->si_pid);
        pool_refill(r);
        return 0;
}

/* The generation <runtime_dir>/<language>/current names (difysandbox-prepare-runtime switches it when a
 * package update rebuilds the tree); UINT64_MAX when it cannot be read (no tree: no slot can prepare a run
 * then). */
static uint64_t tree_current(const Runner *r, Language language) {
        _cleanup_free_ char *link = NULL;
        char target[64];
        uint64_t n;
        ssize_t len;

        if (asprintf(&link, "%s/%s/current", r->cfg->runtime_dir, language_to_string(language)) < 0)
                return UINT64_MAX;
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
                return UINT64_MAX;
        target[len] = '\0';
        if (strncmp(target, "gen-", 4) != 0 || parse_uint64(target + 4, &n) < 0)
                return UINT64_MAX;
        return n;
}

/* A slot says it is ready: which dependency generation its run holds. */
static int on_slot_control(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Runner *r = userdata;
        PoolSlot *slot = NULL;
        SlotReady ready;
        size_t len = 0;
        int payload = -EBADF, e;

        for (size_t i = 0; i < r->pool.n_slots; i++)
                if (r->pool.slots[i].control_fd == fd)
                        slot = &r->pool.slots[i];
        if (!slot)
                return 0;
        e = runner_recv(fd, &ready, sizeof(ready), MSG_DONTWAIT, &len, &payload);
        (void) safe_close(payload);
        if (e == -EAGAIN)
                return 0;
        if (e < 0 || len != sizeof(ready) || ready.magic != SLOT_MESSAGE_MAGIC ||
            slot->state != POOL_SLOT_PREPARING || ready.packages_generation == SLOT_GONE) {
                /* Its run died while it waited (SLOT_GONE), the slot died, or it says something a slot
                 * never says: it goes (on_child() cleans up). */
                slot_retire(slot);
                pool_refill(r);
                return 0;
        }
        slot->state = POOL_SLOT_IDLE;
        slot->packages_generation = ready.packages_generation;
        r->backoff_usec = 0;
        pool_refill(r);
        return 0;
}

static void slot_start(Runner *r, Language language, bool preload) {
        HandlerContext ctx = runner_context(r);
        PoolSlot *slot = NULL;
        int sv[2], e;
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                log_warning_errno(-errno, "Cannot make a socket pair for a pool slot, ignoring: %m");
                return;
        }
        pid = fork_tracked(r, POOL_SLOT_PREPARING, language, sv[0], sv[1], -EBADF, &slot);
        if (pid == 0) {
                (void) close(sv[0]);
                slot_main(&ctx, language, r->cfg->enable_network, preload, sv[1]);
        }
        (void) close(sv[1]);
        if (pid < 0) {
                (void) close(sv[0]);
                log_warning_errno(pid, "Cannot fork a pool slot, ignoring: %m");
                return;
        }
        slot->config_generation = r->config_generation;
        slot->light = !preload;
        slot->tree_generation = tree_current(r, language);
        e = sd_event_add_io(r->event, (sd_event_source **) &slot->control_source, sv[0], EPOLLIN,
                            on_slot_control, r);
        if (e < 0)
                slot_retire(slot);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static bool language_preloads(const Runner *r, Language language) {
        char *const *modules = runtime_pool_preload(runtime_get(language), r->cfg);

        return modules && modules[0];
}

/* Whether a preloaded run of language is worth making (PRELOAD_DEMAND_USEC). */
static bool preloads_in_demand(const Runner *r, Language language) {
        if (!language_preloads(r, language))
                return false;
        if (!r->ran[language])
                return true;
        return r->preload_wanted_usec[language] != 0 &&
               now(CLOCK_MONOTONIC) - r->preload_wanted_usec[language] < PRELOAD_DEMAND_USEC;
}

/* Whether the host's CPUs have been idle for the last second or so (cpu-idle.h): only then may the pool
 * spend CPU time on preload imports, or throw a light slot away to make a preloaded one. */
static bool cpus_idle(Runner *r) {
        CpuTimes reading;

        return cpu_idle_update(&r->cpu_idle, now(CLOCK_MONOTONIC),
                               cpustat_read(&reading) >= 0 ? &reading : NULL);
}

/* Once runs pause and the CPUs are idle: one idle light slot of a language whose preloads code uses goes, so
 * that a preloaded slot takes its place (the next refill). One at a time, and only when nothing is being
 * prepared. Under steady load no prepared run is thrown away: the light one serves the next request. */
static bool pool_upgrade_one(Runner *r) {
        for (size_t i = 0; i < r->pool.n_slots; i++)
                if (r->pool.slots[i].state == POOL_SLOT_PREPARING)
                        return false;
        for (size_t i = 0; i < r->pool.n_slots; i++) {
                PoolSlot *slot = &r->pool.slots[i];

                if (slot->state == POOL_SLOT_IDLE && slot->light && preloads_in_demand(r, slot->language)) {
                        slot_retire(slot);
                        return true;
                }
        }
        return false;
}

/* Starts the slot the pool wants now, if any (pool.h decides: one at a time, never while the CPUs are
 * busy with runs): light while runs are coming or the CPUs are busy, preloaded once runs pause on idle
 * CPUs and code uses the preloads. */
static void pool_refill(Runner *r) {
        Language language = pool_next_to_prepare(&r->pool);
        uint64_t now_usec = now(CLOCK_MONOTONIC), quiet_at = r->last_run_usec + REFILL_QUIET_USEC;
        bool paused = now_usec >= quiet_at, quiet;

        if (r->draining) {
                drain_check(r); /* every change of the pool table comes through here */
                return;
        }
        if (now_usec < r->prepare_not_before)
                return; /* the periodic timer looks again */
        if (!paused) {
                /* Look again once runs pause, not only at the next periodic tick. */
                (void) sd_event_source_set_time(r->timer, quiet_at);
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
        }
        /* Runs paused but the CPUs still busy: the periodic tick looks again (a timer set to quiet_at,
         * which has passed, would fire at once, again and again). */
        quiet = paused && cpus_idle(r);
        if (language < 0) {
                if (quiet && pool_upgrade_one(r))
                        pool_refill(r);
                return;
        }
        slot_start(r, language, /* preload= */ quiet && preloads_in_demand(r, language));
}

/* ---- configuration and generations ---- */

static void retire_all(Runner *r) {
        for (size_t i = 0; i < r->pool.n_slots; i++)
                if (r->pool.slots[i].state == POOL_SLOT_IDLE ||
                    r->pool.slots[i].state == POOL_SLOT_PREPARING)
                        slot_retire(&r->pool.slots[i]);
}

static void pool_limits(const Config *cfg, PoolLimits *ret) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        *ret = (PoolLimits){
                .handlers_max = cfg->max_requests,
                .cpus = cpus > 0 ? (unsigned) cpus : 1,
        };
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                ret->size[l] = runtime_pool_size(runtime_get(l), cfg);
}

/* RLIMIT_NOFILE raised toward what the limits need (fd-budget.h); returns how many worker connections
 * fit. Logs when the limit falls short: the unit's LimitNOFILE= covers every configuration it accepts. */
static unsigned connections_budget(const PoolLimits *limits) {
        uint64_t needed = fd_budget_needed(limits), soft = needed, hard = needed;
        unsigned n;
        int e;

        e = fd_budget_raise(needed, &soft, &hard);
        if (e < 0) {
                log_warning_errno(e, "Cannot raise RLIMIT_NOFILE to %" PRIu64 ", ignoring: %m", needed);
                return FD_BUDGET_CONNECTIONS_MAX;
        }
        n = fd_budget_connections(limits, soft);
        if (soft < needed)
                log_warning(
                        "RLIMIT_NOFILE is %" PRIu64 " (hard limit %" PRIu64 "), below the %" PRIu64
                        " that max_requests, pool_size and %u worker connections need: at most %u worker "
                        "connections are kept open (raise LimitNOFILE=)",
                        soft, hard, needed, FD_BUDGET_CONNECTIONS_MAX, n);
        return n;
}

/* The state that follows from a configuration: sandbox (cgroup layout, compiled filters), admission. */
static int runner_apply(Runner *r, Config *cfg) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        RunFailure failure = { 0 };
        Admit *admit = NULL;
        int e;

        e = languages_sandbox_new(cfg, &sb, &failure);
        if (e >= 0)
                e = sandbox_compile_filters(sb, &failure);
        if (e < 0) {
                log_error_errno(e, "Cannot set up the sandbox (step '%s'%s%s): %m",
                                run_step_to_string(failure.step), failure.detail ? ": " : "",
                                failure.detail ? failure.detail : "");
                run_failure_done(&failure);
                return e;
        }
        /* Not a failure: each run still gets a namespace of its own, only a dearer one to tear down. */
        e = sandbox_open_netns_template(sb);
        if (e == -ENOENT)
                log_info("This kernel gives network namespaces no TCP hash table of their own (Linux 6.1+): "
                         "tearing down each run's walks the host's");
        else if (e < 0)
                log_warning_errno(e,
                                  "Cannot make the namespace the runs' network namespaces are made from, so "
                                  "tearing down each run's walks the host's TCP hash table: %m");
        e = admit_open(cfg, &admit);
        if (e < 0)
                return log_error_errno(e, "Cannot open the admission state in '%s/admission': %m",
                                       cfg->state_dir);

        r->sandbox = sandbox_free(r->sandbox);
        r->admit = admit_free(r->admit);
        if (r->cfg) {
                config_done(r->cfg);
                free(r->cfg);
        }
        r->cfg = cfg;
        r->sandbox = TAKE_PTR(sb);
        r->admit = admit;
        PoolLimits limits;
        pool_limits(cfg, &limits);
        r->pool.limits = limits;
        r->connections_max = connections_budget(&limits);
        struct passwd *pw = getpwnam(cfg->worker_user);
        r->worker_uid = pw ? pw->pw_uid : (uid_t) -1;
        return 0;
}

/* If the manager published a configuration since ours, it replaces ours, and the pool's slots made with
 * ours go. A configuration that cannot be loaded is logged, and ours stays. */
static void reload_if_stale(Runner *r) {
        _cleanup_free_ Config *cfg = NULL;
        uint64_t generation = stats_config_generation(r->stats);
        int e;

        if (!r->reloadable || generation == r->config_generation)
                return;
        cfg = calloc(1, sizeof(*cfg));
        if (!cfg)
                return;
        e = config_setup(cfg, NULL); /* logs why it fails */
        if (e >= 0) {
                e = runner_apply(r, cfg);
                if (e >= 0)
                        TAKE_PTR(cfg);
                else
                        config_done(cfg);
        }
        r->config_generation = generation; /* tried once per generation, not once per request */
        if (e < 0) {
                log_warning_errno(e, "Keeping the configuration in force: %m");
                return;
        }
        log_info("Using the configuration difysandbox-manager published (generation %" PRIu64 ")",
                 generation);
        retire_all(r);
}

static uint64_t packages_current(const Runner *r, Language language) {
        _cleanup_free_ char *dir = NULL;
        uint64_t current = 0;

        if (asprintf(&dir, "%s/%s/" PACKAGES_DIR_NAME, r->cfg->runtime_dir, language_to_string(language)) <
            0)
                return UINT64_MAX; /* matches no slot: the request runs on demand */
        if (generation_current(dir, &current) < 0)
                return UINT64_MAX;
        return current;
}

/* Idle slots of language prepared on an older runtime tree go: a security update must reach the next
 * run, not the one after the pool turned over. A slot forked before the switch may have resolved
 * either tree; it goes too (a wasted slot, never a stale run). */
static void retire_old_tree_slots(Runner *r, Language language) {
        uint64_t current = tree_current(r, language);

        for (size_t i = 0; i < r->pool.n_slots; i++) {
                PoolSlot *slot = &r->pool.slots[i];

                if (slot->state == POOL_SLOT_IDLE && slot->language == language &&
                    slot->tree_generation != current)
                        slot_retire(slot);
        }
}

/* Idle slots whose run holds an old dependency generation or runtime tree go. */
static void retire_stale_slots(Runner *r) {
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                uint64_t current = UINT64_MAX;

                for (size_t i = 0; i < r->pool.n_slots; i++) {
                        PoolSlot *slot = &r->pool.slots[i];

                        if (slot->state != POOL_SLOT_IDLE || slot->language != l)
                                continue;
                        if (current == UINT64_MAX)
                                current = packages_current(r, l);
                        if (slot->packages_generation != current ||
                            slot->config_generation != r->config_generation)
                                slot_retire(slot);
                }
                retire_old_tree_slots(r, l);
        }
}

/* Each episode that has been quiet long enough gets its one closing line. */
static void episodes_close(Runner *r) {
        uint64_t now_usec = now(CLOCK_MONOTONIC);

        for (Pressure p = 0; p < _PRESSURE_MAX; p++)
                if (episode_quiet(&r->pressure[p], now_usec, EPISODE_QUIET_USEC))
                        log_info("Worker connections back to normal after %" PRIu64 " %s",
                                 episode_end(&r->pressure[p]), pressure_summary[p]);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;

        episodes_close(r);
        (void) sd_event_source_set_time_relative(s, CHECK_INTERVAL_USEC);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r->draining)
                return 0; /* the pool is retired and stays empty */
        reload_if_stale(r);
        retire_stale_slots(r);
        sandbox_sweep(r->sandbox);
        pool_refill(r); /* may bring the next tick forward, to when runs pause */
        return 0;
}

/* ---- requests ---- */

/* Hands the run to an idle slot of its language (1), or returns 0 when there is none. */
static int dispatch_to_slot(Runner *r, Conn *c, const RunnerRequest *req, int code_fd) {
        RunnerRequestWire wire;
        PoolSlot *slot;
        pid_t stale[16];
        size_t n_stale = 0;

        if (req->network != r->cfg->enable_network)
                return 0; /* the pool holds the kind Dify asks for: network as configured */
        retire_old_tree_slots(r, (Language) req->language);
        slot = pool_take_idle(&r->pool, (Language) req->language, req->wants_preload, r->config_generation,
                              packages_current(r, (Language) req->language), stale, ELEMENTSOF(stale),
                              &n_stale);
        for (size_t i = 0; i < n_stale; i++)
                slot_retire(pool_find(&r->pool, stale[i]));
        if (!slot)
                return 0;
        runner_request_encode(req, &wire);
        int fds[2] = { c->fd, code_fd };
        if (runner_send_fds(slot->control_fd, &wire, sizeof(wire), fds, 2) < 0) {
                slot_retire(slot); /* it died meanwhile */
                return 0;
        }
        /* Handed over: whatever it says now (SLOT_GONE after our request crossed it) is not read. */
        (void) sd_event_source_set_enabled(slot->control_source, SD_EVENT_OFF);
        slot->userdata = c;
        c->handler = slot->pid;
        return 1;
}

/* Forks a handler for the run, which makes it on demand. */
static int dispatch_cold(Runner *r, Conn *c, const RunnerRequest *req, int code_fd) {
        HandlerContext ctx = runner_context(r);
        PoolSlot *slot = NULL;
        pid_t pid;

        pid = fork_tracked(r, POOL_SLOT_HANDLING, (Language) req->language, -EBADF, c->fd, code_fd, &slot);
        if (pid == 0) {
                int e = sandbox_after_fork(ctx.sandbox, &(RunFailure){ 0 });
                if (e < 0)
                        e = handler_reply_status(c->fd, RUNNER_STATUS_FAILED, e, RUN_STEP_SCOPE,
                                                 "cannot connect to systemd on the system bus",
                                                 ctx.config_generation);
                else
                        e = handler_run(&ctx, req, code_fd, NULL, c->fd);
                _exit(e < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        if (pid < 0)
                return pid;
        slot->userdata = c;
        c->handler = pid;
        return 0;
}

static int handle_run(Runner *r, Conn *c, const RunnerRequest *req, int code_fd) {
        int e;

        r->last_run_usec = now(CLOCK_MONOTONIC);
        cpu_idle_run_started(&r->cpu_idle);
        r->ran[req->language] = true;
        if (req->wants_preload)
                r->preload_wanted_usec[req->language] = r->last_run_usec;

        if (!pool_may_handle(&r->pool)) {
                log_warning("Refusing a run: %u requests (max_requests) are being handled",
                            pool_count_handlers(&r->pool));
                stats_record_rejected(r->stats, req->language);
                stats_record_refused_max_requests(r->stats, req->language);
                return handler_reply_status(c->fd, RUNNER_STATUS_BUSY, 0, _RUN_STEP_INVALID, NULL,
                                            r->config_generation);
        }
        e = dispatch_to_slot(r, c, req, code_fd);
        if (e == 0)
                e = dispatch_cold(r, c, req, code_fd);
        if (e < 0) {
                log_error_errno(e, "Cannot fork a handler for a run: %m");
                return handler_reply_status(c->fd, RUNNER_STATUS_FAILED, e, RUN_STEP_RUNNER,
                                            "cannot fork a handler", r->config_generation);
        }
        (void) sd_event_source_set_enabled(c->io, SD_EVENT_OFF); /* its handler answers; then the next */
        pool_refill(r);
        return 0;
}

static int conn_read(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        Runner *r = c->runner;
        _cleanup_close_ int payload = -EBADF;
        RunnerRequestWire wire;
        RunnerRequest req;
        size_t len = 0;
        int e;

        e = runner_recv(fd, &wire, sizeof(wire), MSG_DONTWAIT, &len, &payload);
        if (e == -EAGAIN)
                return 0;
        if (e == -EMFILE) {
                /* A run's code came, and we had no descriptor for it: this request fails, not the
                 * connection; an idle one goes so that the next fits. */
                (void) out_of_fds(r, c, e, "a run's code was dropped"); /* c is answered below */
                e = handler_reply_status(fd, RUNNER_STATUS_FAILED, e, RUN_STEP_RUNNER,
                                         "the runner is out of file descriptors", r->config_generation);
                if (e < 0)
                        conn_free(c);
                return 0;
        }
        if (e >= 0) {
                reload_if_stale(r);
                e = runner_request_decode(&wire, len, r->cfg->code_max, &req);
        }
        if (e >= 0 && req.op == RUNNER_OP_RUN)
                e = payload < 0 ? -EBADMSG : payload_check(payload, req.code_len);
        else if (e >= 0 && payload >= 0)
                e = -EBADMSG; /* a configuration request brings nothing */
        if (e < 0) {
                /* The end of the connection, or a message no worker of ours sends: only this one closes. */
                if (e != -ECONNRESET)
                        log_warning_errno(e, "Closing a worker connection after a malformed request: %m");
                conn_free(c);
                return 0;
        }
        if (req.op == RUNNER_OP_CONFIG) {
                HandlerContext ctx = runner_context(r);
                e = handler_config(&ctx, fd);
        } else
                e = handle_run(r, c, &req, payload);
        if (e < 0) {
                log_debug_errno(e, "Cannot answer a worker, closing its connection: %m");
                if (c->handler == 0)
                        conn_free(c);
        }
        return 0;
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Runner *r = ((Conn *) userdata)->runner;

        (void) conn_read(s, fd, revents, userdata); /* may free the connection */
        drain_check(r);
        return 0;
}

/* ---- listening ---- */

static bool peer_allowed(const Runner *r, const struct ucred *cred) {
        return cred->uid == 0 || (r->worker_uid != (uid_t) -1 && cred->uid == r->worker_uid);
}

static unsigned conns_of_peer(const Runner *r, pid_t peer) {
        unsigned n = 0;

        for (const Conn *c = r->conns; c; c = c->next)
                n += c->peer == peer;
        return n;
}

/* The checks of an accepted connection; takes conn. */
static void accepted(Runner *r, int conn) {
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !peer_allowed(r, &cred)) {
                if (pressure_begins(r, PRESSURE_STRANGER))
                        log_warning(
                                "Refusing connections to the runner from processes that are neither root "
                                "nor '%s'",
                                r->cfg->worker_user);
                (void) close(conn);
                return;
        }
        /* A peer in another PID namespace is PID 0 here: such peers share one allowance, failing closed. */
        if (conns_of_peer(r, cred.pid) >= CONNECTIONS_PER_PEER_MAX) {
                if (pressure_begins(r, PRESSURE_PER_PEER))
                        log_warning("Refusing more connections to the runner from PID %i (UID %u): it holds "
                                    "%u, the most one process may",
                                    (int) cred.pid, (unsigned) cred.uid, CONNECTIONS_PER_PEER_MAX);
                (void) close(conn);
                return;
        }
        (void) conn_new(r, conn, cred.pid);
}

static void listener_pause(Runner *r) {
        (void) sd_event_source_set_enabled(r->listener, SD_EVENT_OFF);
        (void) sd_event_source_set_time_relative(r->resume, ACCEPT_PAUSE_USEC);
        (void) sd_event_source_set_enabled(r->resume, SD_EVENT_ONESHOT);
}

static int on_resume(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;

        (void) sd_event_source_set_enabled(r->listener, SD_EVENT_ON);
        return 0;
}

static int on_listener(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Runner *r = userdata;
        bool shed = false;

        for (;;) {
                int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                if (conn >= 0) {
                        shed = false;
                        accepted(r, conn);
                        continue;
                }
                if (errno == EAGAIN)
                        return 0;
                if (errno == EINTR || errno == ECONNABORTED)
                        continue;
                if (errno == EMFILE || errno == ENFILE) {
                        /* One shed connection makes room for the next accept(); if it did not, the table
                         * is full of other things (or the system's is): rest rather than shed them all. */
                        if (!shed && out_of_fds(r, NULL, -errno, "cannot accept a worker connection")) {
                                shed = true;
                                continue;
                        }
                } else if (pressure_begins(r, PRESSURE_ACCEPT))
                        log_warning_errno(-errno,
                                          "Cannot accept a worker connection, retrying every %" PRIu64
                                          " ms: %m",
                                          ACCEPT_PAUSE_USEC / 1000);
                listener_pause(r); /* the connections wait in the backlog meanwhile */
                return 0;
        }
}

static int on_handoff(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Runner *r = userdata;
        char byte;
        size_t len = 0;
        int conn = -EBADF, e;

        e = runner_recv(fd, &byte, sizeof(byte), MSG_DONTWAIT, &len, &conn);
        if (e == -EAGAIN)
                return 0;
        if (e == -EMFILE) {
                /* MSG_CTRUNC: the connection it brought is lost (its worker answers that the runner cannot
                 * be reached), not the line to serve. */
                (void) out_of_fds(r, NULL, e, "a connection serve handed over was dropped");
                return 0;
        }
        if (e == -EBADMSG) {
                log_warning_errno(e, "Ignoring a malformed hand-off from serve: %m");
                return 0;
        }
        if (e < 0)
                return sd_event_exit(r->event, 0); /* serve is gone: so are we (serve drains its workers
                                                    * before it closes this; see runner_drain()) */
        if (conn < 0)
                return 0;
        (void) conn_new(r, conn, -1); /* serve's own socketpair: trusted, serve bounds them per source */
        return 0;
}

int runner_add_listener(Runner *r, int fd) {
        int e;

        /* systemd passes it blocking: on_listener() accepts until EAGAIN. */
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        e = sd_event_add_time_relative(r->event, &r->resume, CLOCK_MONOTONIC, ACCEPT_PAUSE_USEC, 0,
                                       on_resume, r);
        if (e >= 0)
                e = sd_event_source_set_enabled(r->resume, SD_EVENT_OFF);
        if (e < 0)
                return e;
        return sd_event_add_io(r->event, &r->listener, fd, EPOLLIN, on_listener, r);
}

int runner_add_handoff(Runner *r, int fd) {
        return sd_event_add_io(r->event, &r->handoff, fd, EPOLLIN, on_handoff, r);
}

/* ---- stopping ---- */

/* The longest a run in flight can still take: waiting for a worker slot, running, and the set-up and
 * teardown around it. */
static uint64_t drain_bound_usec(const Runner *r) {
        return admit_wait_usec(r->cfg) + r->cfg->worker_timeout_usec + DRAIN_MARGIN_USEC;
}

/* A draining runner ends once every run in flight has answered (its connection then reads its end and
 * goes) and every process of the pool table is reaped: no UID, scope or network namespace is left behind,
 * and nothing is killed. */
static void drain_check(Runner *r) {
        if (r->draining && r->pool.n_slots == 0 && r->n_conns == 0)
                (void) sd_event_exit(r->event, 0);
}

static int on_drain_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Runner *r = userdata;

        log_warning("%u runs in flight did not end in %" PRIu64 " s (queue_timeout, worker_timeout and a "
                    "margin); stopping them",
                    pool_count_handlers(&r->pool), drain_bound_usec(r) / USEC_PER_SEC);
        return sd_event_exit(r->event, 0); /* runner_free() kills what is left */
}

/* SIGTERM (systemctl stop or restart, an upgrade): stop taking work and
 * let the runs in flight finish, so that a restart loses no request (issue 40).
 *   - The listening socket is systemd's: connections made from now on wait in its backlog, and the next
 *     runner accepts them.
 *   - Each worker connection is shut for reading. A request its worker sent before that is still read
 *     and served; one sent after fails in the worker with EPIPE, and the worker connects again
 *     (runner-client.c), to the backlog. The kernel orders the two under the socket's lock, so no
 *     request falls in between.
 *   - The pool's prepared runs are retired: each slot kills and reaps its run, whose UID lock and scope
 *     go with it, before the runner ends.
 * The runner then ends (drain_check()), or after drain_bound_usec() it stops what is left.
 * Only the socket-activated runner drains. Under serve, serve itself lets the requests in progress finish
 * (its workers_stop()) before it closes the hand-off socket and signals us; and when serve dies, we get
 * SIGTERM (PR_SET_PDEATHSIG) with no one left to answer: then we stop at once, as before. */
static void runner_drain(Runner *r) {
        uint64_t bound = drain_bound_usec(r);
        unsigned handlers = pool_count_handlers(&r->pool);
        int e;

        if (r->draining)
                return;
        r->draining = true;
        if (r->listener)
                (void) sd_event_source_set_enabled(r->listener, SD_EVENT_OFF);
        if (r->resume)
                (void) sd_event_source_set_enabled(r->resume, SD_EVENT_OFF);
        for (Conn *c = r->conns; c; c = c->next)
                if (shutdown(c->fd, SHUT_RD) < 0)
                        log_debug_errno(-errno, "Cannot shut a worker connection for reading, ignoring: %m");
        retire_all(r);

        /* systemd's stop timeout (TimeoutStopSec=) covers the default configuration; a longer one
         * extends it to our own bound, so that systemd's SIGKILL never comes before it. */
        (void) sd_notifyf(false,
                          "STOPPING=1\nEXTEND_TIMEOUT_USEC=%" PRIu64
                          "\nSTATUS=Stopping: %u runs in flight finish first",
                          bound + STOP_GRACE_USEC, handlers);
        log_info("Stopping: no new runs; waiting up to %" PRIu64 " s for the %u in flight",
                 bound / USEC_PER_SEC, handlers);
        e = sd_event_add_time_relative(r->event, &r->drain_deadline, CLOCK_MONOTONIC, bound, 0,
                                       on_drain_deadline, r);
        if (e < 0)
                log_warning_errno(e, "Cannot bound the wait for the runs in flight, ignoring: %m");
        drain_check(r);
}

/* SIGTERM or SIGINT: drain; a second one: stop the runs in flight at once. */
static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Runner *r = userdata;

        if (!r->listener)
                return sd_event_exit(r->event, 0); /* serve's runner: see runner_drain() */
        if (!r->draining) {
                runner_drain(r);
                return 0;
        }
        log_warning("Second stop signal (%s): stopping %u runs in flight now",
                    strsignal((int) si->ssi_signo), pool_count_handlers(&r->pool));
        return sd_event_exit(r->event, 0);
}

/* ---- life ---- */

int runner_new(Config *cfg, bool reloadable, Runner **ret) {
        _cleanup_(runner_freep) Runner *r = NULL;
        sigset_t mask;
        int e;

        r = calloc(1, sizeof(*r));
        if (!r)
                return log_error_errno(-ENOMEM, "Out of memory");
        r->reloadable = reloadable;
        pool_init(&r->pool, &(PoolLimits){ 0 });

        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGCHLD) < 0 || sigaddset(&mask, SIGTERM) < 0 ||
            sigaddset(&mask, SIGINT) < 0 || sigprocmask(SIG_BLOCK, &mask, &r->old_mask) < 0)
                return log_error_errno(-errno, "Cannot block signals: %m");
        e = sd_event_new(&r->event);
        if (e >= 0)
                e = sd_event_add_signal(r->event, NULL, SIGTERM, on_stop_signal, r);
        if (e >= 0)
                e = sd_event_add_signal(r->event, NULL, SIGINT, on_stop_signal, r);
        if (e >= 0)
                e = sd_event_add_time_relative(r->event, &r->timer, CLOCK_MONOTONIC, CHECK_INTERVAL_USEC, 0,
                                               on_timer, r);
        if (e < 0)
                return log_error_errno(e, "Cannot set up the event loop: %m");

        /* Statistics are not worth refusing to run for: without them, runs are just not counted. */
        e = stats_open(cfg->state_dir, &r->stats);
        if (e < 0)
                log_warning_errno(e, "Cannot open the shared stats in %s, runs are not counted: %m",
                                  cfg->state_dir);
        r->config_generation = stats_config_generation(r->stats);
        e = runner_apply(r, cfg);
        if (e < 0)
                return e;
        *ret = TAKE_PTR(r);
        return 0;
}

Runner *runner_free(Runner *r) {
        if (!r)
                return NULL;
        while (r->conns)
                conn_free(r->conns);
        /* The pool's slots first see their control socket end: each kills and reaps its prepared run and
         * exits, so that no run outlives the runner even for a moment. */
        for (size_t i = 0; i < r->pool.n_slots; i++) {
                PoolSlot *slot = &r->pool.slots[i];
                sd_event_source_disable_unref(slot->control_source);
                sd_event_source_disable_unref(slot->child_source);
                slot->control_fd = safe_close(slot->control_fd);
        }
        for (size_t i = 0; i < r->pool.n_slots; i++) {
                PoolSlot *slot = &r->pool.slots[i];
                uint64_t deadline = now(CLOCK_MONOTONIC) + STOP_GRACE_USEC;

                /* A handler's run in flight is lost (its client gets an error naming the runner); a
                 * slot still preparing, or one that does not go in time, is killed. Our children. */
                if (slot->state == POOL_SLOT_HANDLING)
                        (void) kill(slot->pid, SIGKILL);
                while (waitpid(slot->pid, NULL, WNOHANG) == 0) {
                        if (now(CLOCK_MONOTONIC) >= deadline) {
                                (void) kill(slot->pid, SIGKILL);
                                (void) waitpid(slot->pid, NULL, 0);
                                break;
                        }
                        (void) usleep(10000);
                }
        }
        pool_done(&r->pool);
        sd_event_source_disable_unref(r->listener);
        sd_event_source_disable_unref(r->resume);
        sd_event_source_disable_unref(r->handoff);
        sd_event_source_disable_unref(r->timer);
        sd_event_source_disable_unref(r->drain_deadline);
        sd_event_unref(r->event);
        sandbox_free(r->sandbox);
        admit_free(r->admit);
        stats_close(r->stats);
        if (r->cfg) {
                config_done(r->cfg);
                free(r->cfg);
        }
        (void) sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
        free(r);
        return NULL;
}

/* "2 python3 and 1 nodejs": the pool's size per language, as the descriptors name them. */
static void pool_sizes_format(const PoolLimits *limits, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (Language l = 0; l < _LANGUAGE_MAX && len < size; l++) {
                const char *sep = l == 0 ? "" : l + 1 == _LANGUAGE_MAX ? " and " : ", ";
                int n = snprintf(buf + len, size - len, "%s%u %s", sep, limits->size[l],
                                 language_to_string(l));

                if (n < 0)
                        break;
                len += (size_t) n;
        }
}

int runner_run(Runner *r) {
        char sizes[256];

        pool_refill(r);
        pool_sizes_format(&r->pool.limits, sizes, sizeof(sizes));
        (void) sd_notifyf(false, "READY=1\nSTATUS=Serving; the warm pool keeps %s runs", sizes);
        return sd_event_loop(r->event);
}
