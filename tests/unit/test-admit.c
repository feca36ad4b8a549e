/* Tests of src/runner/admit.c: slots really held (another open file description cannot lock them),
 * refusal at max_requests, a bounded queue wait, arrival order, and nothing leaked by a SIGKILLed
 * holder. Each test has its own mkdtemp() state directory. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/time-util.h"
#include "runner/admit.h"

#define MSEC 1000ULL

typedef struct Fixture {
        Config cfg;
        char dir[64];
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(config_init_defaults(&f->cfg), 0);
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-admit.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        free(f->cfg.state_dir);
        f->cfg.state_dir = strdup(f->dir);
        assert_non_null(f->cfg.state_dir);
        f->cfg.max_requests = 3;
        f->cfg.max_workers = 1;
        *state = f;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int teardown(void **state) {
        Fixture *f = *state;

        nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        config_done(&f->cfg);
        free(f);
        return 0;
}

/* Whether slot file dir/name is locked by someone: a fresh open file description cannot lock it. */
static bool slot_held(const Fixture *f, const char *dir, unsigned slot) {
        char path[128];
        int fd, r;

        snprintf(path, sizeof(path), "%s/admission/%s/%u", f->dir, dir, slot);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false; /* never created: never held */
        r = flock(fd, LOCK_EX | LOCK_NB);
        close(fd);
        return r < 0 && errno == EWOULDBLOCK;
}

static unsigned slots_held(const Fixture *f, const char *dir, unsigned n) {
        unsigned held = 0;

        for (unsigned i = 0; i < n; i++)
                held += slot_held(f, dir, i);
        return held;
}

static void test_wait_bound(void **state) {
        Fixture *f = *state;

        /* queue_timeout alone, whatever worker_timeout is (it used to be max(2 x worker_timeout, 10 s)) */
        f->cfg.worker_timeout_usec = 1000 * MSEC;
        f->cfg.queue_timeout_usec = 50000 * MSEC;
        assert_int_equal(admit_wait_usec(&f->cfg), 50000 * MSEC);
        f->cfg.worker_timeout_usec = 20000 * MSEC;
        f->cfg.queue_timeout_usec = 3000 * MSEC;
        assert_int_equal(admit_wait_usec(&f->cfg), 3000 * MSEC);
}

static void test_open_refuses_zero(void **state) {
        Fixture *f = *state;
        Admit *a = NULL;

        f->cfg.max_workers = 0;
        assert_int_equal(admit_open(&f->cfg, &a), -EINVAL);
        assert_null(a);
}

static void test_take_holds_release_frees(void **state) {
        Fixture *f = *state;
        AdmitTicket *t = NULL;
        Admit *a = NULL;

        assert_int_equal(admit_open(&f->cfg, &a), 0);
        assert_int_equal(admit_take(a, 1000 * MSEC, &t), 0);
        assert_non_null(t);
        assert_true(slot_held(f, "requests", admit_ticket_request_slot(t)));
        assert_true(slot_held(f, "workers", admit_ticket_worker_slot(t)));
        assert_int_equal(slots_held(f, "requests", 3), 1);

        assert_null(admit_release(t));
        assert_int_equal(slots_held(f, "requests", 3), 0);
        assert_int_equal(slots_held(f, "workers", 1), 0);
        admit_free(a);
}

static void test_max_requests_refused_at_once(void **state) {
        Fixture *f = *state;
        AdmitTicket *t[2] = { NULL };
        AdmitTicket *third = NULL;
        Admit *a = NULL;
        uint64_t start;

        f->cfg.max_requests = 2;
        f->cfg.max_workers = 2;
        assert_int_equal(admit_open(&f->cfg, &a), 0);
        assert_int_equal(admit_take(a, 1000 * MSEC, &t[0]), 0);
        assert_int_equal(admit_take(a, 1000 * MSEC, &t[1]), 0);
        assert_int_not_equal(admit_ticket_request_slot(t[0]), admit_ticket_request_slot(t[1]));
        assert_int_not_equal(admit_ticket_worker_slot(t[0]), admit_ticket_worker_slot(t[1]));

        start = now(CLOCK_MONOTONIC);
        assert_int_equal(admit_take(a, 5000 * MSEC, &third), -EBUSY);
        assert_true(now(CLOCK_MONOTONIC) - start < 500 * MSEC); /* refused, not queued */
        assert_null(third);

        admit_release(t[0]);
        assert_int_equal(admit_take(a, 1000 * MSEC, &third), 0); /* the freed slot is usable again */
        admit_release(third);
        admit_release(t[1]);
        admit_free(a);
}

static void test_queue_wait_is_bounded(void **state) {
        Fixture *f = *state;
        AdmitTicket *running = NULL, *waiting = NULL;
        struct sigaction sa;
        Admit *a = NULL;
        uint64_t start, waited;

        assert_int_equal(admit_open(&f->cfg, &a), 0);
        assert_int_equal(admit_take(a, 1000 * MSEC, &running), 0);

        start = now(CLOCK_MONOTONIC);
        assert_int_equal(admit_take(a, 300 * MSEC, &waiting), -ETIMEDOUT);
        waited = now(CLOCK_MONOTONIC) - start;
        assert_true(waited >= 300 * MSEC);
        assert_true(waited < 1500 * MSEC);
        assert_null(waiting);

        /* The refused request holds nothing, and SIGALRM is as it was (no handler left behind). */
        assert_int_equal(slots_held(f, "requests", 3), 1);
        assert_int_equal(sigaction(SIGALRM, NULL, &sa), 0);
        assert_true(sa.sa_handler == SIG_DFL);

        admit_release(running);
        admit_free(a);
}

/* A child that takes a ticket (waiting up to 10 s), reports "<id>" on report_fd, holds it for hold_ms
 * and exits. */
static pid_t spawn_taker(const Config *cfg, char id, int report_fd, unsigned hold_ms) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                AdmitTicket *t = NULL;
                Admit *a = NULL;

                int r = admit_open(cfg, &a);
                if (r >= 0)
                        r = admit_take(a, 10000 * MSEC, &t);
                if (r < 0) {
                        fprintf(stderr, "taker %c: %s\n", id, strerror(-r));
                        _exit(EXIT_FAILURE);
                }
                if (write(report_fd, &id, 1) != 1)
                        _exit(EXIT_FAILURE);
                usleep(hold_ms * 1000);
                admit_release(t);
                admit_free(a);
                _exit(EXIT_SUCCESS);
        }
        return pid;
}

static void test_queue_head_gets_freed_slot(void **state) {
        Fixture *f = *state;
        AdmitTicket *t = NULL;
        Admit *a = NULL;
        int p[2], status;
        uint64_t start;
        pid_t holder;
        char c;

        assert_int_equal(pipe(p), 0);
        assert_int_equal(admit_open(&f->cfg, &a), 0);
        holder = spawn_taker(&f->cfg, 'H', p[1], 300);
        close(p[1]);
        assert_int_equal(read(p[0], &c, 1), 1); /* the holder runs */

        start = now(CLOCK_MONOTONIC);
        assert_int_equal(admit_take(a, 5000 * MSEC, &t), 0);
        assert_true(now(CLOCK_MONOTONIC) - start < 1000 * MSEC); /* right after the holder's 300 ms */
        assert_true(slot_held(f, "workers", 0));

        admit_release(t);
        admit_free(a);
        assert_int_equal(waitpid(holder, &status, 0), holder);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(p[0]);
}

static void test_queue_keeps_arrival_order(void **state) {
        Fixture *f = *state;
        pid_t holder, pids[4];
        char order[5] = { 0 }, c;
        int p[2], status;

        f->cfg.max_requests = 10;
        assert_int_equal(pipe(p), 0);
        /* A child holds the only worker slot (not we: a fork would inherit our locked fds). */
        holder = spawn_taker(&f->cfg, 'H', p[1], 700);
        assert_int_equal(read(p[0], &c, 1), 1);

        for (int i = 0; i < 4; i++) {
                pids[i] = spawn_taker(&f->cfg, (char) ('A' + i), p[1], 30);
                usleep(100 * 1000); /* each is in the queue before the next arrives */
        }
        assert_int_equal(slots_held(f, "requests", 10), 5);
        close(p[1]); /* a taker that fails makes read() end instead of wait */

        for (int i = 0; i < 4; i++)
                assert_int_equal(read(p[0], &order[i], 1), 1);
        assert_string_equal(order, "ABCD");
        assert_int_equal(waitpid(holder, &status, 0), holder);
        for (int i = 0; i < 4; i++) {
                assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        close(p[0]);
}

static int open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        int n = 0;

        if (!d)
                return -1;
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* A run holds O(1) files whatever max_workers is: with 1024 worker slots (the bound config_load() allows)
 * and room for only 32 open files, a take succeeds, also when the only free slot is the last one tried,
 * and leaves no more than its two slot files open. */
static void test_take_opens_few_files(void **state) {
        Fixture *f = *state;
        pid_t pid;
        int status;

        f->cfg.max_workers = 1024;
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = { .rlim_cur = 32, .rlim_max = 32 };
                AdmitTicket *t = NULL;
                Admit *a = NULL;
                int before, after;

                if (admit_open(&f->cfg, &a) < 0 || setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(10);
                before = open_fds();
                if (admit_take(a, 2000 * MSEC, &t) < 0)
                        _exit(12);
                after = open_fds();
                if (before < 0 || after != before + 2) /* the request and the worker slot, nothing else */
                        _exit(13);
                admit_release(t);
                admit_free(a);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_sigkill_leaks_nothing(void **state) {
        Fixture *f = *state;
        AdmitTicket *t[3] = { NULL };
        Admit *a = NULL;
        pid_t victims[2];
        int p[2], status;
        char c;

        assert_int_equal(pipe(p), 0);
        /* One holder that runs and one that waits in the queue behind it... */
        f->cfg.max_workers = 1;
        victims[0] = spawn_taker(&f->cfg, 'A', p[1], 60000);
        assert_int_equal(read(p[0], &c, 1), 1);
        victims[1] = spawn_taker(&f->cfg, 'B', p[1], 60000);
        usleep(200 * 1000);
        assert_int_equal(slots_held(f, "requests", 3), 2);

        /* ...killed at once. */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(kill(victims[i], SIGKILL), 0);
                assert_int_equal(waitpid(victims[i], &status, 0), victims[i]);
                assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        }

        /* Every slot is free again: max_requests requests in flight, one of them running at once. */
        assert_int_equal(slots_held(f, "requests", 3), 0);
        assert_int_equal(slots_held(f, "workers", 1), 0);
        f->cfg.max_workers = 3;
        assert_int_equal(admit_open(&f->cfg, &a), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(admit_take(a, 1000 * MSEC, &t[i]), 0);
        assert_int_equal(slots_held(f, "requests", 3), 3);
        for (int i = 0; i < 3; i++)
                admit_release(t[i]);
        admit_free(a);
        close(p[0]);
        close(p[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_wait_bound, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_refuses_zero, setup, teardown),
                cmocka_unit_test_setup_teardown(test_take_holds_release_frees, setup, teardown),
                cmocka_unit_test_setup_teardown(test_max_requests_refused_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queue_wait_is_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queue_head_gets_freed_slot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queue_keeps_arrival_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sigkill_leaks_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_take_opens_few_files, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
