/* Unit tests of src/common/time-util.h: microsecond conversions and the clocks. Properties only, no timing
 * bounds (the machine may be loaded). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "common/time-util.h"

static void test_units(void **state) {
        assert_int_equal(USEC_PER_SEC, 1000000);
        assert_int_equal(USEC_PER_MSEC * 1000, USEC_PER_SEC);
        assert_int_equal(USEC_PER_MINUTE, 60 * USEC_PER_SEC);
        assert_int_equal(USEC_PER_HOUR, 3600 * USEC_PER_SEC);
        assert_int_equal(NSEC_PER_USEC * USEC_PER_SEC, 1000000000);
}

static void test_timespec_round_trip(void **state) {
        static const usec_t values[] = {
                0, 1, 999999, 1000000, 1500000, UINT64_C(86400) * USEC_PER_SEC + 7
        };

        for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
                struct timespec ts = timespec_store(values[i]);

                assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
                assert_int_equal(timespec_load(&ts), values[i]);
        }
        /* nanoseconds below a microsecond are dropped, not rounded up */
        assert_int_equal(timespec_load(&(struct timespec){ .tv_sec = 2, .tv_nsec = 999 }), 2 * USEC_PER_SEC);
        assert_int_equal(timespec_load(&(struct timespec){ .tv_sec = -1, .tv_nsec = 0 }), 0);
}

static void test_now_is_monotonic_and_matches_the_clock(void **state) {
        struct timespec ts;
        usec_t a, b, c;

        a = now(CLOCK_MONOTONIC);
        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        b = timespec_load(&ts);
        c = now(CLOCK_MONOTONIC);
        assert_true(a > 0);
        assert_true(a <= b && b <= c);

        /* CLOCK_REALTIME is a date after 2020 */
        assert_true(now(CLOCK_REALTIME) > UINT64_C(1577836800) * USEC_PER_SEC);
}

static void test_poll_timeout(void **state) {
        assert_int_equal(usec_to_poll_timeout(USEC_INFINITY), -1);
        assert_int_equal(usec_to_poll_timeout(0), 0);
        assert_int_equal(usec_to_poll_timeout(1), 1); /* rounded up: never wakes before the deadline */
        assert_int_equal(usec_to_poll_timeout(USEC_PER_MSEC), 1);
        assert_int_equal(usec_to_poll_timeout(USEC_PER_MSEC + 1), 2);
        assert_int_equal(usec_to_poll_timeout(USEC_INFINITY - 1), INT32_MAX);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_units),
                cmocka_unit_test(test_timespec_round_trip),
                cmocka_unit_test(test_now_is_monotonic_and_matches_the_clock),
                cmocka_unit_test(test_poll_timeout),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
