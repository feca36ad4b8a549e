/* Unit tests of src/runner/cpu-idle.c: the warm pool's optional work waits for idle CPUs, judged over a
 * whole window, and a runner that just started counts as idle. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runner/cpu-idle.h"

#define SEC (UINT64_C(1000) * 1000)

static void test_a_runner_that_just_started_counts_as_idle(void **state) {
        CpuIdle g = { 0 };
        CpuTimes t = { .total = 1000, .idle = 0 };

        assert_true(cpu_idle_update(&g, 5 * SEC, &t));
}

static void test_busy_then_idle_windows(void **state) {
        CpuIdle g = { 0 };
        CpuTimes t = { .total = 1000, .idle = 900 };

        (void) cpu_idle_update(&g, 1 * SEC, &t);
        /* a second of which half went unused (one of two CPUs busy): not idle */
        t.total += 200, t.idle += 100;
        assert_false(cpu_idle_update(&g, 2 * SEC, &t));
        /* a quiet instant after it keeps the busy verdict: the window is not whole */
        t.total += 20, t.idle += 20;
        assert_false(cpu_idle_update(&g, 2 * SEC + SEC / 10, &t));
        /* a whole second, almost all of it unused */
        t.total += 200, t.idle += 190;
        assert_true(cpu_idle_update(&g, 3 * SEC + SEC / 10, &t));
        /* exactly at the threshold counts as idle; below it does not */
        t.total += 1000, t.idle += CPU_IDLE_PERMILLE;
        assert_true(cpu_idle_update(&g, 5 * SEC, &t));
        t.total += 1000, t.idle += CPU_IDLE_PERMILLE - 1;
        assert_false(cpu_idle_update(&g, 7 * SEC, &t));
}

static void test_no_reading_or_a_backward_one_is_busy(void **state) {
        CpuIdle g = { 0 };
        CpuTimes t = { .total = 1000, .idle = 900 }, back = { .total = 10, .idle = 9 };

        assert_true(cpu_idle_update(&g, 1 * SEC, &t));
        assert_false(cpu_idle_update(&g, 3 * SEC, NULL));
        g = (CpuIdle){ 0 };
        (void) cpu_idle_update(&g, 1 * SEC, &t);
        assert_false(cpu_idle_update(&g, 3 * SEC, &back));
}

/* A run makes the CPUs busy until a whole window after it: neither the quiet verdict from before it nor a
 * window it began in (idle on average) lets the pool preload under load. */
static void test_a_run_restarts_the_window(void **state) {
        CpuIdle g = { 0 };
        CpuTimes t = { .total = 1000, .idle = 900 };

        (void) cpu_idle_update(&g, 1 * SEC, &t);
        t.total += 200, t.idle += 200;
        assert_true(cpu_idle_update(&g, 2 * SEC, &t)); /* a quiet second */

        cpu_idle_run_started(&g);
        /* half a second later, the window not whole: the verdict from before the run no longer holds */
        t.total += 100, t.idle += 100;
        assert_false(cpu_idle_update(&g, 2 * SEC + SEC / 2, &t));
        /* the window starts at that reading: 0.6 s later it is still not whole */
        t.total += 120, t.idle += 120;
        assert_false(cpu_idle_update(&g, 3 * SEC + SEC / 10, &t));
        /* a whole quiet second after the run: idle again */
        t.total += 100, t.idle += 100;
        assert_true(cpu_idle_update(&g, 3 * SEC + SEC / 2 + SEC / 10, &t));

        /* a run at the very start of a window, the rest of it quiet: busy until the next whole window */
        cpu_idle_run_started(&g);
        assert_false(cpu_idle_update(&g, 4 * SEC, &t));
        t.total += 200, t.idle += 200;
        assert_true(cpu_idle_update(&g, 5 * SEC, &t));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_runner_that_just_started_counts_as_idle),
                cmocka_unit_test(test_busy_then_idle_windows),
                cmocka_unit_test(test_no_reading_or_a_backward_one_is_busy),
                cmocka_unit_test(test_a_run_restarts_the_window),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
