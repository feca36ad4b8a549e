/* test-uidpool: src/sandbox/uidpool.c. Each test has its own state directory from mkdtemp(), so the
 * tests run in parallel with each other and with a real service using /run/difysandbox. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "sandbox/uidpool.h"

#define RANGE_MIN 20000
#define RANGE_MAX 20009
#define RANGE_N (RANGE_MAX - RANGE_MIN + 1)

static int setup_state_dir(void **state) {
        char *dir = strdup("/tmp/test-uidpool-XXXXXX");

        if (!dir || !mkdtemp(dir)) {
                free(dir);
                return -1;
        }
        *state = dir;
        return 0;
}

static int teardown_state_dir(void **state) {
        char *dir = *state;
        _cleanup_free_ char *uids = NULL;
        DIR *d;

        if (asprintf(&uids, "%s/uids", dir) < 0)
                return -1;
        d = opendir(uids);
        if (d) {
                struct dirent *de;

                while ((de = readdir(d)))
                        if (de->d_name[0] != '.')
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                (void) closedir(d);
                (void) rmdir(uids);
        }
        (void) rmdir(dir);
        free(dir);
        return 0;
}

static void test_take_all_then_busy(void **state) {
        const char *dir = *state;
        UidLease *leases[RANGE_N] = {};
        UidLease *extra = (UidLease *) 0x1, *again = NULL;
        bool seen[RANGE_N] = {};
        uid_t released;

        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), RANGE_N);

        for (int i = 0; i < RANGE_N; i++) {
                assert_int_equal(uidpool_take(dir, RANGE_MIN, RANGE_MAX, &leases[i]), 0);
                assert_non_null(leases[i]);
                assert_in_range(leases[i]->uid, RANGE_MIN, RANGE_MAX);
                assert_false(seen[leases[i]->uid - RANGE_MIN]); /* never the same UID twice */
                seen[leases[i]->uid - RANGE_MIN] = true;
                assert_true(leases[i]->fd >= 0);
                assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), RANGE_N - i - 1);
        }

        /* The eleventh take finds nothing and leaves *ret alone. */
        assert_int_equal(uidpool_take(dir, RANGE_MIN, RANGE_MAX, &extra), -EBUSY);
        assert_ptr_equal(extra, (UidLease *) 0x1);
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), 0);

        /* Release one: exactly that UID comes back. */
        released = leases[3]->uid;
        leases[3] = uidpool_release(leases[3]);
        assert_null(leases[3]);
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), 1);
        assert_int_equal(uidpool_take(dir, RANGE_MIN, RANGE_MAX, &again), 0);
        assert_int_equal(again->uid, released);
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), 0);
        again = uidpool_release(again);

        for (int i = 0; i < RANGE_N; i++)
                leases[i] = uidpool_release(leases[i]);
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), RANGE_N);
}

static void test_ranges_are_separate(void **state) {
        const char *dir = *state;
        UidLease *a = NULL, *b = NULL;

        /* Holding the only UID of one range does not take anything from a disjoint range. */
        assert_int_equal(uidpool_take(dir, 30000, 30000, &a), 0);
        assert_int_equal(a->uid, 30000);
        assert_int_equal(uidpool_count_free(dir, 30000, 30000), 0);
        assert_int_equal(uidpool_count_free(dir, 30001, 30004), 4);
        assert_int_equal(uidpool_take(dir, 30001, 30001, &b), 0);
        assert_int_equal(b->uid, 30001);
        /* and an overlapping range sees the two held UIDs */
        assert_int_equal(uidpool_count_free(dir, 29999, 30002), 2);
        a = uidpool_release(a);
        b = uidpool_release(b);
        assert_int_equal(uidpool_count_free(dir, 29999, 30002), 4);
}

static void test_lock_files(void **state) {
        const char *dir = *state;
        _cleanup_free_ char *path = NULL, *uids = NULL;
        UidLease *lease = NULL;
        struct stat st;

        assert_int_equal(uidpool_take(dir, 30000, 30000, &lease), 0);

        /* <state_dir>/uids is private to root and holds one lock file per UID, named by its number. */
        assert_true(asprintf(&uids, "%s/uids", dir) > 0);
        assert_int_equal(lstat(uids, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0700);
        assert_true(asprintf(&path, "%s/uids/30000", dir) > 0);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 0077, 0);

        /* The lease's fd is close-on-exec: a run's interpreter never inherits it. */
        assert_true(fcntl(lease->fd, F_GETFD) & FD_CLOEXEC);
        lease = uidpool_release(lease);
}

static void test_invalid_ranges(void **state) {
        const char *dir = *state;
        UidLease *lease = (UidLease *) 0x1;

        /* uid 0 is root: never part of a pool. */
        assert_int_equal(uidpool_take(dir, 0, 10, &lease), -EINVAL);
        assert_ptr_equal(lease, (UidLease *) 0x1);
        assert_int_equal(uidpool_take(dir, 0, 0, &lease), -EINVAL);
        assert_ptr_equal(lease, (UidLease *) 0x1);
        assert_int_equal(uidpool_take(dir, 20010, 20009, &lease), -EINVAL);
        assert_ptr_equal(lease, (UidLease *) 0x1);
        assert_int_equal(uidpool_count_free(dir, 0, 10), -EINVAL);
        assert_int_equal(uidpool_count_free(dir, 20010, 20009), -EINVAL);

        /* the refused calls left nothing locked */
        assert_int_equal(uidpool_count_free(dir, 1, 10), 10);

        assert_null(uidpool_release(NULL));
}

/* Reads exactly n bytes; false on EOF or error. */
static bool read_full(int fd, void *buf, size_t n) {
        char *p = buf;

        while (n > 0) {
                ssize_t k = read(fd, p, n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                p += k;
                n -= (size_t) k;
        }
        return true;
}

#define N_TAKERS 8

static void test_concurrent_takers(void **state) {
        const char *dir = *state;
        int go[2], report[2], hold[2];
        pid_t pids[N_TAKERS];
        bool seen[N_TAKERS] = {};

        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        assert_int_equal(pipe2(hold, O_CLOEXEC), 0);

        for (int i = 0; i < N_TAKERS; i++) {
                pids[i] = fork();
                assert_true(pids[i] >= 0);
                if (pids[i] == 0) {
                        UidLease *lease = NULL;
                        int32_t msg;
                        char c;

                        (void) alarm(10); /* never outlive a failed parent for long */
                        (void) close(go[1]);
                        (void) close(hold[1]);
                        (void) close(report[0]);
                        /* Start barrier: every taker is forked before any of them takes. */
                        (void) read(go[0], &c, 1);
                        if (uidpool_take(dir, RANGE_MIN, RANGE_MIN + N_TAKERS - 1, &lease) < 0)
                                msg = -1;
                        else
                                msg = (int32_t) lease->uid;
                        if (write(report[1], &msg, sizeof(msg)) != sizeof(msg))
                                _exit(2);
                        /* Hold the lease until the parent has seen every UID. */
                        (void) read(hold[0], &c, 1);
                        _exit(msg < 0 ? 1 : 0);
                }
        }
        go[0] = safe_close(go[0]);
        hold[0] = safe_close(hold[0]);
        report[1] = safe_close(report[1]);
        go[1] = safe_close(go[1]); /* EOF: all takers start at once */

        for (int i = 0; i < N_TAKERS; i++) {
                int32_t uid;

                assert_true(read_full(report[0], &uid, sizeof(uid)));
                if (uid < 0)
                        fail_msg("taker %d got no UID from a range with one UID per taker", i);
                assert_in_range(uid, RANGE_MIN, RANGE_MIN + N_TAKERS - 1);
                if (seen[uid - RANGE_MIN])
                        fail_msg("UID %d handed to two concurrent takers", uid);
                seen[uid - RANGE_MIN] = true;
        }
        /* while they all hold their lease, the range is empty */
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MIN + N_TAKERS - 1), 0);

        hold[1] = safe_close(hold[1]);
        report[0] = safe_close(report[0]);
        for (int i = 0; i < N_TAKERS; i++) {
                int status;

                assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
                assert_true(WIFEXITED(status));
                assert_int_equal(WEXITSTATUS(status), 0);
        }
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MIN + N_TAKERS - 1), N_TAKERS);
}

static void test_sigkill_releases(void **state) {
        const char *dir = *state;
        UidLease *lease = NULL;
        int report[2], status;
        int32_t uid;
        pid_t pid;

        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                UidLease *held = NULL;
                int32_t msg;

                (void) alarm(10); /* never outlive a failed parent for long */
                (void) close(report[0]);
                msg = uidpool_take(dir, RANGE_MIN, RANGE_MAX, &held) < 0 ? -1 : (int32_t) held->uid;
                (void) write(report[1], &msg, sizeof(msg));
                for (;;)
                        (void) pause(); /* killed by the parent; never releases */
        }
        report[1] = safe_close(report[1]);
        assert_true(read_full(report[0], &uid, sizeof(uid)));
        report[0] = safe_close(report[0]);
        assert_in_range(uid, RANGE_MIN, RANGE_MAX);

        /* Held: the pool is one short, and that very UID cannot be taken. */
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), RANGE_N - 1);
        assert_int_equal(uidpool_take(dir, (uid_t) uid, (uid_t) uid, &lease), -EBUSY);
        assert_null(lease);

        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        /* The kernel dropped the lock with the dead holder's fd: nothing leaked. */
        assert_int_equal(uidpool_count_free(dir, RANGE_MIN, RANGE_MAX), RANGE_N);
        assert_int_equal(uidpool_take(dir, (uid_t) uid, (uid_t) uid, &lease), 0);
        assert_int_equal(lease->uid, (uid_t) uid);
        lease = uidpool_release(lease);
}

static void test_count_creates_and_holds_nothing(void **state) {
        const char *dir = *state;
        _cleanup_free_ char *sub = NULL, *uids = NULL;
        UidLease *lease = NULL;
        struct stat st;

        /* The manager counts for its stats: that must not write to the pool, nor hold a lock even for an
         * instant, or a run taking a UID then would skip it. */
        assert_true(asprintf(&sub, "%s/absent", dir) > 0);
        assert_int_equal(uidpool_count_free(sub, 30000, 30009), 10);
        assert_int_equal(stat(sub, &st), -1);
        assert_int_equal(errno, ENOENT);

        assert_int_equal(uidpool_take(dir, 30000, 30000, &lease), 0);
        assert_true(asprintf(&uids, "%s/uids/30001", dir) > 0);
        assert_int_equal(uidpool_count_free(dir, 30000, 30009), 9);
        assert_int_equal(stat(uids, &st), -1); /* no lock file made for a UID nobody took */
        lease = uidpool_release(lease);
}

static void test_missing_state_dir_is_created(void **state) {
        const char *dir = *state;
        _cleanup_free_ char *sub = NULL, *uids = NULL;
        UidLease *lease = NULL;
        struct stat st;

        /* /run/difysandbox does not exist after boot: the first take creates it. */
        assert_true(asprintf(&sub, "%s/state", dir) > 0);
        assert_int_equal(uidpool_take(sub, 30000, 30000, &lease), 0);
        assert_int_equal(stat(sub, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        lease = uidpool_release(lease);
        assert_int_equal(uidpool_count_free(sub, 30000, 30000), 1);

        assert_true(asprintf(&uids, "%s/uids", sub) > 0);
        {
                _cleanup_free_ char *f = NULL;

                assert_true(asprintf(&f, "%s/30000", uids) > 0);
                assert_int_equal(unlink(f), 0);
        }
        assert_int_equal(rmdir(uids), 0);
        assert_int_equal(rmdir(sub), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_take_all_then_busy, setup_state_dir,
                                                teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_ranges_are_separate, setup_state_dir,
                                                teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_lock_files, setup_state_dir, teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_count_creates_and_holds_nothing, setup_state_dir,
                                                teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_invalid_ranges, setup_state_dir, teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_concurrent_takers, setup_state_dir, teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_sigkill_releases, setup_state_dir, teardown_state_dir),
                cmocka_unit_test_setup_teardown(test_missing_state_dir_is_created, setup_state_dir,
                                                teardown_state_dir),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
