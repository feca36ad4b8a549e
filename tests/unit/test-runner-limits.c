/* Unit tests of src/runner/fd-budget.c and src/common/episode.c (issue 24): the runner's descriptor need
 * follows its configured limits, the connections it keeps fit under RLIMIT_NOFILE within fixed bounds,
 * the unit's LimitNOFILE= covers every configuration the config file accepts, and a burst of events is
 * one episode: one warning when it begins, one summary once it has been quiet. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "common/episode.h"
#include "runner/fd-budget.h"
#include "runner/pool.h"

/* units/difysandbox-runner.service.in's LimitNOFILE=. */
#define UNIT_LIMIT_NOFILE 65536U

static void test_reserved_follows_the_limits(void **state) {
        PoolLimits small = { .size = { 2, 1 }, .handlers_max = 50 };
        PoolLimits big = { .size = { 2, 1 }, .handlers_max = 500 };

        assert_int_equal(fd_budget_reserved(&small), FD_BUDGET_BASE + FD_BUDGET_PER_CHILD * (50 + 2 * 3));
        assert_true(fd_budget_reserved(&big) > fd_budget_reserved(&small));
        assert_int_equal(fd_budget_needed(&small), fd_budget_reserved(&small) + FD_BUDGET_CONNECTIONS_MAX);
}

static void test_unit_limit_covers_every_accepted_configuration(void **state) {
        /* config-file.c's bounds: max_requests <= 16384, pool_size.* <= 64 */
        PoolLimits largest = { .size = { 64, 64 }, .handlers_max = 16384 };

        assert_true(fd_budget_needed(&largest) <= UNIT_LIMIT_NOFILE);
        assert_int_equal(fd_budget_connections(&largest, UNIT_LIMIT_NOFILE), FD_BUDGET_CONNECTIONS_MAX);
}

static void test_connections_fit_under_the_limit(void **state) {
        PoolLimits l = { .size = { 2, 1 }, .handlers_max = 50 };
        uint64_t reserved = fd_budget_reserved(&l);

        assert_int_equal(fd_budget_connections(&l, RLIM_INFINITY), FD_BUDGET_CONNECTIONS_MAX);
        assert_int_equal(fd_budget_connections(&l, reserved + 1000), 1000);
        assert_int_equal(fd_budget_connections(&l, 1024), 1024 - reserved);
        /* a limit below the reserve still keeps a few (accept()'s EMFILE is survived anyway) */
        assert_int_equal(fd_budget_connections(&l, 10), FD_BUDGET_CONNECTIONS_MIN);
        assert_int_equal(fd_budget_connections(&l, reserved), FD_BUDGET_CONNECTIONS_MIN);
}

static void test_raise_never_lowers_and_stops_at_hard(void **state) {
        struct rlimit rl;
        uint64_t soft = 0, hard = 0;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        assert_int_equal(fd_budget_raise(16, &soft, &hard), 0); /* below what we have: unchanged */
        assert_int_equal(soft, rl.rlim_cur);
        assert_int_equal(hard, rl.rlim_max);
        if (rl.rlim_max != RLIM_INFINITY) {
                assert_int_equal(fd_budget_raise((uint64_t) rl.rlim_max + 1, &soft, &hard), 0);
                assert_int_equal(soft, rl.rlim_max); /* up to the hard limit, which stays */
                assert_int_equal(hard, rl.rlim_max);
        }
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void test_episode_logs_once_and_sums_up(void **state) {
        Episode e = { 0 };

        assert_false(episode_quiet(&e, 0, 10));
        assert_int_equal(episode_end(&e), 0);
        assert_true(episode_event(&e, 100)); /* begins: the one warning */
        for (uint64_t t = 101; t < 10000; t++)
                assert_false(episode_event(&e, t)); /* a flood is still one episode */
        assert_false(episode_quiet(&e, 10000, 10));
        assert_true(episode_quiet(&e, 10009, 10));
        assert_int_equal(episode_end(&e), 9900);
        assert_false(episode_quiet(&e, 20000, 10));
        assert_true(episode_event(&e, 20000)); /* the next one warns again */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reserved_follows_the_limits),
                cmocka_unit_test(test_unit_limit_covers_every_accepted_configuration),
                cmocka_unit_test(test_connections_fit_under_the_limit),
                cmocka_unit_test(test_raise_never_lowers_and_stops_at_hard),
                cmocka_unit_test(test_episode_logs_once_and_sums_up),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
