/* test-clocks: src/sandbox/clocks.c, a run's time namespace. The draw needs nothing; entering a namespace
 * needs root (CAP_SYS_TIME) and a kernel with time namespaces, else those tests skip. Each namespace is
 * made in a forked child. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/clocks.h"

#define DRAWS 256

static uint64_t nsec_of(clockid_t clock) {
        struct timespec ts;

        assert_int_equal(clock_gettime(clock, &ts), 0);
        return (uint64_t) ts.tv_sec * CLOCKS_NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* Issue 39: the start was a whole number of seconds, so a run's clock kept the host's fraction. Now the
 * fraction is drawn too: of 256 uniform draws, none falls on a whole second but with a chance of 2.6e-7,
 * and both halves of a second are hit but with a chance of 2^-255. */
static void test_random_start_has_a_random_fraction(void **state) {
        unsigned whole = 0, low = 0, high = 0;

        for (int i = 0; i < DRAWS; i++) {
                uint64_t start = UINT64_MAX, frac;

                assert_int_equal(clocks_random_start(&start), 0);
                assert_true(start < CLOCKS_START_SPAN_SEC * CLOCKS_NSEC_PER_SEC);
                frac = start % CLOCKS_NSEC_PER_SEC;
                whole += frac == 0;
                if (frac < CLOCKS_NSEC_PER_SEC / 2)
                        low++;
                else
                        high++;
        }
        assert_int_equal(whole, 0);
        assert_true(low > 0 && high > 0);
}

/* In a child: enters a namespace starting at start_nsec; writes what its clocks then read, converted
 * back with the lag, and the parent checks them. Returns false where time namespaces cannot be made. */
static bool enter_and_read(uint64_t start_nsec, uint64_t ret[3]) {
        uint64_t got[4] = { 0 };
        int pipefd[2], status;
        pid_t pid;
        ssize_t n;

        assert_int_equal(pipe(pipefd), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                uint64_t lag = 0, out[4];
                int r = clocks_enter(start_nsec, &lag);

                out[0] = (uint64_t) r;
                out[1] = nsec_of(CLOCK_MONOTONIC);
                out[2] = nsec_of(CLOCK_BOOTTIME);
                out[3] = out[1] / 1000 + lag; /* our clock, as the parent's, in usec */
                _exit(write(pipefd[1], out, sizeof(out)) == (ssize_t) sizeof(out) ? 0 : 1);
        }
        (void) close(pipefd[1]);
        n = read(pipefd[0], got, sizeof(got));
        (void) close(pipefd[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(n, (ssize_t) sizeof(got));
        if ((int) got[0] == -EPERM || (int) got[0] == -EINVAL)
                return false;
        assert_int_equal((int) got[0], 0);
        ret[0] = got[1];
        ret[1] = got[2];
        ret[2] = got[3];
        return true;
}

/* The clocks read the start to the nanosecond, plus only the time since: below and above the host's
 * uptime (an offset with negative and positive seconds, the nanoseconds always 0 to 999999999), and the
 * lag converts the run's clock back to ours. */
static void test_enter_starts_the_clocks_at_the_nanosecond(void **state) {
        const uint64_t starts[] = {
                CLOCKS_NSEC_PER_SEC / 2 + 1,                          /* 0.500000001 s */
                UINT64_C(12345678) * CLOCKS_NSEC_PER_SEC + 987654321, /* 12345678.987654321 s */
                CLOCKS_START_SPAN_SEC * CLOCKS_NSEC_PER_SEC - 1,
        };
        uint64_t got[3], before, after;

        if (geteuid() != 0)
                skip();
        for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
                before = nsec_of(CLOCK_MONOTONIC);
                if (!enter_and_read(starts[i], got))
                        skip();
                after = nsec_of(CLOCK_MONOTONIC);
                /* monotonic, boot: each at most (after - before) past the start */
                for (int c = 0; c < 2; c++) {
                        assert_true(got[c] >= starts[i]);
                        assert_true(got[c] - starts[i] <= after - before);
                }
                /* the run's clock, converted with the lag, falls between our readings (to the usec) */
                assert_true(got[2] + 1 >= before / 1000 && got[2] <= after / 1000 + 1);
        }
        assert_int_equal(clocks_enter(CLOCKS_START_SPAN_SEC * CLOCKS_NSEC_PER_SEC, got), -ERANGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_random_start_has_a_random_fraction),
                cmocka_unit_test(test_enter_starts_the_clocks_at_the_nanosecond),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
