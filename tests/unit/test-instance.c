/* test-instance: src/sandbox/instance.c. Each test has its own registry directory from mkdtemp(); other
 * instances are forked children, since a process never counts its own registrations against itself. */

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "sandbox/instance.h"

typedef struct Dirs {
        char registry[64];
} Dirs;

static int setup(void **state) {
        Dirs *d = calloc(1, sizeof(*d));

        if (!d)
                return -1;
        strcpy(d->registry, "/tmp/test-instance-XXXXXX");
        if (!mkdtemp(d->registry))
                return -1;
        *state = d;
        return 0;
}

static int teardown(void **state) {
        Dirs *d = *state;
        DIR *dir = opendir(d->registry);

        if (dir) {
                struct dirent *de;
                while ((de = readdir(dir)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                (void) unlinkat(dirfd(dir), de->d_name, 0);
                (void) closedir(dir);
        }
        (void) rmdir(d->registry);
        free(d);
        return 0;
}

/* A neighbour: a child that registers, says so on a pipe, and lives until the pipe back closes. */
static pid_t neighbour(const char *registry, const char *state_dir, uid_t lo, uid_t hi, int *ret_release) {
        int up[2], down[2];
        pid_t pid;
        char c;

        assert_int_equal(pipe(up), 0);
        assert_int_equal(pipe(down), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Instance *in = NULL;
                char *reason = NULL;
                (void) close(down[1]); /* else its read below never sees EOF */
                char ok = instance_register(registry, state_dir, lo, hi, &in, &reason) >= 0 ? 'y' : 'n';

                (void) write(up[1], &ok, 1);
                (void) read(down[0], &c, 1); /* until the test closes its end */
                instance_free(in);
                _exit(0);
        }
        (void) close(up[1]);
        (void) close(down[0]);
        assert_int_equal(read(up[0], &c, 1), 1);
        assert_int_equal(c, 'y');
        (void) close(up[0]);
        *ret_release = down[1];
        return pid;
}

static void reap(pid_t pid, int release) {
        (void) close(release);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static void test_id_is_stable_and_per_state_dir(void **state) {
        char a[INSTANCE_ID_LEN + 1], b[INSTANCE_ID_LEN + 1], c[INSTANCE_ID_LEN + 1];

        assert_int_equal(instance_id("/run/difysandbox-a", a), 0);
        assert_int_equal(instance_id("/run/difysandbox-a", b), 0);
        assert_int_equal(instance_id("/run/difysandbox-b", c), 0);
        assert_string_equal(a, b);
        assert_string_not_equal(a, c);
        assert_int_equal(strlen(a), INSTANCE_ID_LEN);
        assert_null(strpbrk(a, "/-")); /* usable in run-<instance>-<uid> */
}

static void test_overlap_with_a_live_neighbour_is_refused(void **state) {
        Dirs *d = *state;
        Instance *in = NULL;
        _cleanup_free_ char *reason = NULL;
        int release;
        pid_t pid = neighbour(d->registry, "/tmp/neighbour-a", 10000, 10999, &release);

        assert_int_equal(instance_register(d->registry, "/tmp/neighbour-b", 10900, 11999, &in, &reason),
                         -EADDRINUSE);
        assert_null(in);
        assert_non_null(reason);
        assert_non_null(strstr(reason, "10900-11999 overlaps 10000-10999"));
        assert_non_null(strstr(reason, "/tmp/neighbour-a"));

        /* disjoint: fine */
        assert_int_equal(instance_register(d->registry, "/tmp/neighbour-b", 11000, 11999, &in, NULL), 0);
        instance_free(in);
        in = NULL;
        /* the same state_dir shares the pool (its UID locks): not a neighbour */
        assert_int_equal(instance_register(d->registry, "/tmp/neighbour-a", 10000, 10999, &in, NULL), 0);
        instance_free(in);
        reap(pid, release);
}

static void test_a_dead_neighbour_claims_nothing(void **state) {
        Dirs *d = *state;
        Instance *in = NULL;
        int release;
        pid_t pid = neighbour(d->registry, "/tmp/neighbour-a", 10000, 10999, &release);

        reap(pid, release); /* it freed its entry; a SIGKILLed one leaves a file nobody holds locked */
        assert_int_equal(instance_register(d->registry, "/tmp/neighbour-b", 10000, 10999, &in, NULL), 0);
        instance_free(in);
}

static void test_a_killed_neighbour_claims_nothing(void **state) {
        Dirs *d = *state;
        Instance *in = NULL;
        int release;
        pid_t pid = neighbour(d->registry, "/tmp/neighbour-a", 10000, 10999, &release);

        assert_int_equal(kill(pid, SIGKILL), 0);
        reap(pid, release);
        assert_int_equal(instance_register(d->registry, "/tmp/neighbour-b", 10000, 10999, &in, NULL), 0);
        instance_free(in);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_id_is_stable_and_per_state_dir),
                cmocka_unit_test_setup_teardown(test_overlap_with_a_live_neighbour_is_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_a_dead_neighbour_claims_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_killed_neighbour_claims_nothing, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
