/* Unit tests of src/common/cpustat.c: /proc/stat's "cpu" line read as what passed and what was idle, and
 * the idle share between two readings. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/cpustat.h"

static void test_parse_sums_the_eight_fields_and_idle_with_iowait(void **state) {
        CpuTimes t;

        /* user nice system idle iowait irq softirq steal guest guest_nice */
        assert_int_equal(cpustat_parse("cpu  100 2 30 400 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n", &t),
                         0);
        assert_int_equal(t.total, 100 + 2 + 30 + 400 + 5 + 6 + 7 + 8); /* guest is in user already */
        assert_int_equal(t.idle, 400 + 5);
}

static void test_parse_refuses_what_is_not_the_cpu_line(void **state) {
        CpuTimes t = { .total = 42, .idle = 7 };

        assert_int_equal(cpustat_parse("cpu0 1 2 3 4 5 6 7 8\n", &t), -EBADMSG);
        assert_int_equal(cpustat_parse("cpu  1 2 3\n", &t), -EBADMSG);
        assert_int_equal(cpustat_parse("cpu  1 2 -3 4 5 6 7 8\n", &t), -EBADMSG);
        assert_int_equal(cpustat_parse("", &t), -EBADMSG);
        assert_int_equal(t.total, 42); /* untouched on failure */
}

static void test_read_of_this_host(void **state) {
        CpuTimes t;

        assert_int_equal(cpustat_read(&t), 0);
        assert_true(t.total >= t.idle);
        assert_true(t.total > 0);
}

static void test_idle_permille(void **state) {
        CpuTimes a = { .total = 1000, .idle = 500 }, b = { .total = 2000, .idle = 1250 };

        assert_int_equal(cpustat_idle_permille(&a, &b), 750);
        assert_int_equal(cpustat_idle_permille(&a, &a), -ERANGE); /* no tick passed */
        assert_int_equal(cpustat_idle_permille(&b, &a), -ERANGE); /* backwards */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_sums_the_eight_fields_and_idle_with_iowait),
                cmocka_unit_test(test_parse_refuses_what_is_not_the_cpu_line),
                cmocka_unit_test(test_read_of_this_host),
                cmocka_unit_test(test_idle_permille),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
