/* admit: see admit.h. */

#include "admit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/time-util.h"

/* How often the queue head looks at the worker slots, and how often a waiter past its deadline is
 * interrupted until it notices (see flock_until()). */
#define POLL_INTERVAL_USEC UINT64_C(5000)
#define DEADLINE_TICK_USEC UINT64_C(20000)

struct Admit {
        int dir_fd; /* <state_dir>/admission */
        int requests_fd, workers_fd;
        uint32_t max_requests, max_workers;
};

struct AdmitTicket {
        int request_fd, worker_fd;
        unsigned request_slot, worker_slot;
        uint64_t waited_usec;
};

DEFINE_POINTER_CLEANUP(Admit *, admit_free);
DEFINE_POINTER_CLEANUP(AdmitTicket *, admit_release);

static int mkdir_open(int parent_fd, const char *name, int *ret_fd) {
        int fd;

        if (mkdirat(parent_fd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(parent_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int admit_open(const Config *cfg, Admit **ret) {
        _cleanup_(admit_freep) Admit *admit = NULL;
        _cleanup_close_ int state_fd = -EBADF;
        int r;

        if (cfg->max_requests == 0 || cfg->max_workers == 0)
                return -EINVAL; /* config_load() refuses these; upstream hangs on max_workers: 0 */

        admit = calloc(1, sizeof(*admit));
        if (!admit)
                return -ENOMEM;
        *admit = (Admit){ .dir_fd = -EBADF,
                          .requests_fd = -EBADF,
                          .workers_fd = -EBADF,
                          .max_requests = cfg->max_requests,
                          .max_workers = cfg->max_workers };

        if (mkdir(cfg->state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        state_fd = open(cfg->state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        r = mkdir_open(state_fd, "admission", &admit->dir_fd);
        if (r < 0)
                return r;
        r = mkdir_open(admit->dir_fd, "requests", &admit->requests_fd);
        if (r < 0)
                return r;
        r = mkdir_open(admit->dir_fd, "workers", &admit->workers_fd);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(admit);
        return 0;
}

Admit *admit_free(Admit *admit) {
        if (!admit)
                return NULL;
        (void) safe_close(admit->dir_fd);
        (void) safe_close(admit->requests_fd);
        (void) safe_close(admit->workers_fd);
        free(admit);
        return NULL;
}

uint64_t admit_wait_usec(const Config *cfg) {
        return cfg->queue_timeout_usec;
}

/* Opens slot file i of dir_fd. Every open() is a file description of its own, so two takers in one
 * process conflict just as two processes do. */
static int slot_open(int dir_fd, unsigned i) {
        char name[3 * sizeof(unsigned) + 1];
        int fd;

        if (snprintf(name, sizeof(name), "%u", i) >= (int) sizeof(name))
                return -ENAMETOOLONG;
        fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        return fd < 0 ? -errno : fd;
}

/* Locks the first free slot of n, starting at a place of our own so that concurrent takers rarely try
 * the same file. -EBUSY when all are held. */
static int slot_take_any(int dir_fd, unsigned n, int *ret_fd, unsigned *ret_slot) {
        unsigned start = (unsigned) getpid();

        for (unsigned k = 0; k < n; k++) {
                _cleanup_close_ int fd = -EBADF;
                unsigned i = (start + k) % n;

                fd = slot_open(dir_fd, i);
                if (fd < 0)
                        return fd;
                if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        if (errno == EWOULDBLOCK)
                                continue;
                        return -errno;
                }
                *ret_fd = TAKE_FD(fd);
                *ret_slot = i;
                return 0;
        }
        return -EBUSY;
}

static void alarm_interrupt(int sig) {
        /* Nothing to do: the signal exists to make a blocked flock() return EINTR. */
}

/* flock(fd, LOCK_EX), giving up at deadline (CLOCK_MONOTONIC, usec) with -ETIMEDOUT. The blocking call
 * keeps our place among the waiters (admit.h); a timer interrupts it with SIGALRM once the deadline has
 * passed, and then every DEADLINE_TICK_USEC, so a signal that lands just before flock() is entered is
 * followed by another one. Before the deadline nothing interrupts the wait. The worker is
 * single-threaded, so the process-wide SIGALRM disposition is ours for the duration; it is restored. */
static int flock_until(int fd, uint64_t deadline) {
        struct sigaction sa = { .sa_handler = alarm_interrupt }, old_sa; /* no SA_RESTART */
        struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
        struct itimerspec its = { .it_value = timespec_store(deadline),
                                  .it_interval = timespec_store(DEADLINE_TICK_USEC) };
        sigset_t alarm_set, old_mask;
        timer_t timer;
        int r;

        if (flock(fd, LOCK_EX | LOCK_NB) >= 0)
                return 0;
        if (errno != EWOULDBLOCK)
                return -errno;
        if (now(CLOCK_MONOTONIC) >= deadline)
                return -ETIMEDOUT;

        if (sigemptyset(&alarm_set) < 0 || sigaddset(&alarm_set, SIGALRM) < 0)
                return -errno;
        if (timer_create(CLOCK_MONOTONIC, &sev, &timer) < 0)
                return -errno;
        if (sigaction(SIGALRM, &sa, &old_sa) < 0) {
                r = -errno;
                (void) timer_delete(timer);
                return r;
        }
        if (sigprocmask(SIG_UNBLOCK, &alarm_set, &old_mask) < 0) {
                r = -errno;
                (void) sigaction(SIGALRM, &old_sa, NULL);
                (void) timer_delete(timer);
                return r;
        }

        r = timer_settime(timer, TIMER_ABSTIME, &its, NULL) < 0 ? -errno : -EINTR;
        while (r == -EINTR) {
                if (flock(fd, LOCK_EX) >= 0)
                        r = 0;
                else if (errno != EINTR)
                        r = -errno;
                else if (now(CLOCK_MONOTONIC) >= deadline)
                        r = -ETIMEDOUT;
        }

        /* Once the timer is gone no SIGALRM can be generated, and one generated before was delivered to
         * us (it was unblocked), so the old disposition can come back. */
        (void) timer_delete(timer);
        (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        (void) sigaction(SIGALRM, &old_sa, NULL);
        return r;
}

/* As the head of the queue: take the first worker slot that is or comes free before deadline. Each round
 * opens the slot files one at a time and keeps only the one it locks: a run holds O(1) files whatever
 * max_workers is (holding all of them once made every run fail with EMFILE at max_workers 30000). */
static int worker_slot_wait(Admit *admit, uint64_t deadline, int *ret_fd, unsigned *ret_slot) {
        for (;;) {
                struct timespec nap;
                uint64_t now_usec;
                int r;

                r = slot_take_any(admit->workers_fd, admit->max_workers, ret_fd, ret_slot);
                if (r != -EBUSY)
                        return r;

                now_usec = now(CLOCK_MONOTONIC);
                if (now_usec >= deadline)
                        return -ETIMEDOUT;
                nap = timespec_store(deadline - now_usec < POLL_INTERVAL_USEC ? deadline - now_usec
                                                                              : POLL_INTERVAL_USEC);
                (void) nanosleep(&nap, NULL); /* EINTR only shortens the nap */
        }
}

int admit_take(Admit *admit, uint64_t wait_usec, AdmitTicket **ret) {
        _cleanup_(admit_releasep) AdmitTicket *ticket = NULL;
        _cleanup_close_ int queue_fd = -EBADF;
        uint64_t start = now(CLOCK_MONOTONIC), deadline;
        int r;

        deadline = wait_usec > UINT64_MAX - start ? UINT64_MAX : start + wait_usec;

        ticket = calloc(1, sizeof(*ticket));
        if (!ticket)
                return -ENOMEM;
        *ticket = (AdmitTicket){ .request_fd = -EBADF, .worker_fd = -EBADF };

        /* In flight, or refused at once. */
        r = slot_take_any(admit->requests_fd, admit->max_requests, &ticket->request_fd,
                          &ticket->request_slot);
        if (r < 0)
                return r;

        /* Through the queue, even if a worker slot is free right now: see admit.h. */
        queue_fd = openat(admit->dir_fd, "queue", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (queue_fd < 0)
                return -errno;
        r = flock_until(queue_fd, deadline);
        if (r < 0)
                return r;

        r = worker_slot_wait(admit, deadline, &ticket->worker_fd, &ticket->worker_slot);
        if (r < 0)
                return r;
        queue_fd = safe_close(queue_fd); /* the next in line becomes the head */

        ticket->waited_usec = now(CLOCK_MONOTONIC) - start;
        *ret = TAKE_PTR(ticket);
        return 0;
}

AdmitTicket *admit_release(AdmitTicket *ticket) {
        if (!ticket)
                return NULL;
        /* The worker slot first: a queue head polling for it may go on while our request slot follows. */
        (void) safe_close(ticket->worker_fd);
        (void) safe_close(ticket->request_fd);
        free(ticket);
        return NULL;
}

unsigned admit_ticket_request_slot(const AdmitTicket *ticket) {
        return ticket->request_slot;
}

unsigned admit_ticket_worker_slot(const AdmitTicket *ticket) {
        return ticket->worker_slot;
}

uint64_t admit_ticket_waited_usec(const AdmitTicket *ticket) {
        return ticket->waited_usec;
}
