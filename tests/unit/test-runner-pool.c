/* Unit tests of src/runner/pool.c: the warm pool never holds more than its size, prepares one slot at a
 * time and never while the CPUs are busy with handlers, bounds the handlers, and never hands out a slot
 * made with another configuration or dependency generation. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runner/pool.h"

static const PoolLimits limits = {
        .size = { [LANGUAGE_PYTHON3] = 2, [LANGUAGE_NODEJS] = 1 },
        .handlers_max = 3,
        .cpus = 2,
};

/* Fills the pool the way runner.c does: prepare what it asks for, mark it ready. */
static unsigned fill(Pool *p, pid_t *next_pid) {
        unsigned started = 0;
        Language l;

        while ((l = pool_next_to_prepare(p)) >= 0) {
                PoolSlot *s = pool_add(p, (*next_pid)++, POOL_SLOT_PREPARING, l, -1);
                assert_non_null(s);
                assert_int_equal(pool_next_to_prepare(p), _LANGUAGE_INVALID); /* one at a time */
                s->state = POOL_SLOT_IDLE;
                started++;
        }
        return started;
}

static void test_fills_to_size_and_no_further(void **state) {
        Pool p;
        pid_t pid = 100;

        pool_init(&p, &limits);
        assert_int_equal(fill(&p, &pid), 3);
        assert_int_equal(pool_count(&p, POOL_SLOT_IDLE, LANGUAGE_PYTHON3), 2);
        assert_int_equal(pool_count(&p, POOL_SLOT_IDLE, LANGUAGE_NODEJS), 1);
        assert_int_equal(pool_next_to_prepare(&p), _LANGUAGE_INVALID);
        pool_done(&p);
}

static void test_taken_slot_is_never_idle_again(void **state) {
        Pool p;
        pid_t pid = 100, stale[4];
        size_t n_stale = 0;

        pool_init(&p, &limits);
        (void) fill(&p, &pid);
        PoolSlot *s =
                pool_take_idle(&p, LANGUAGE_NODEJS, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale);
        assert_non_null(s);
        assert_int_equal(s->state, POOL_SLOT_HANDLING);
        assert_null(
                pool_take_idle(&p, LANGUAGE_NODEJS, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale));
        assert_int_equal(pool_count_handlers(&p), 1);
        /* the pool wants a replacement, while the taken one still serves */
        assert_int_equal(pool_next_to_prepare(&p), LANGUAGE_NODEJS);
        pool_done(&p);
}

static void test_stale_slots_are_not_handed_out(void **state) {
        Pool p;
        pid_t pid = 100, stale[4];
        size_t n_stale = 0;

        pool_init(&p, &limits);
        (void) fill(&p, &pid);
        /* a new configuration generation: both python slots are stale */
        assert_null(
                pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 1, 0, stale, 4, &n_stale));
        assert_int_equal(n_stale, 2);
        /* a new dependency generation likewise */
        assert_null(
                pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 7, stale, 4, &n_stale));
        assert_int_equal(n_stale, 2);
        assert_non_null(
                pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale));
        pool_done(&p);
}

/* Code that names no preload module takes a light slot first: a preloaded one stays for the code that
 * imports its modules, and is taken only when no light one is idle (a prepared run beats one made on
 * demand). */
static void test_other_code_takes_a_light_slot_first(void **state) {
        Pool p;
        pid_t pid = 100, stale[4];
        size_t n_stale = 0;
        PoolSlot *light = NULL, *taken;

        pool_init(&p, &limits);
        (void) fill(&p, &pid);
        for (size_t i = 0; i < p.n_slots; i++)
                if (p.slots[i].language == LANGUAGE_PYTHON3)
                        light = &p.slots[i]; /* the last python slot: not the one a table scan meets first */
        assert_non_null(light);
        light->light = true;
        pid_t light_pid = light->pid;
        taken = pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ false, 0, 0, stale, 4, &n_stale);
        assert_non_null(taken);
        assert_int_equal(taken->pid, light_pid);
        /* no light one left: the preloaded one serves */
        taken = pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ false, 0, 0, stale, 4, &n_stale);
        assert_non_null(taken);
        assert_false(taken->light);
        pool_done(&p);
}

static void test_a_preloaded_slot_is_taken_before_a_light_one(void **state) {
        Pool p;
        pid_t pid = 100, stale[4];
        size_t n_stale = 0;
        PoolSlot *light, *taken;

        pool_init(&p, &limits);
        (void) fill(&p, &pid);
        /* the first python slot in the table was prepared while runs came: without the preloads */
        light = pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale);
        assert_non_null(light);
        light->state = POOL_SLOT_IDLE;
        light->light = true;
        taken = pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale);
        assert_non_null(taken);
        assert_false(taken->light);
        /* the light one is still there for the next request */
        taken = pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale);
        assert_ptr_equal(taken, light);
        pool_done(&p);
}

static void test_no_preparing_while_cpus_are_busy(void **state) {
        Pool p;
        pid_t pid = 100;

        pool_init(&p, &limits);
        assert_non_null(pool_add(&p, pid++, POOL_SLOT_HANDLING, LANGUAGE_PYTHON3, -1));
        assert_int_equal(pool_next_to_prepare(&p), LANGUAGE_PYTHON3);
        assert_non_null(pool_add(&p, pid++, POOL_SLOT_HANDLING, LANGUAGE_PYTHON3, -1));
        assert_int_equal(pool_next_to_prepare(&p), _LANGUAGE_INVALID); /* 2 handlers on 2 CPUs */
        pool_remove(&p, 100);
        assert_int_equal(pool_next_to_prepare(&p), LANGUAGE_PYTHON3);
        pool_done(&p);
}

static void test_handlers_are_bounded(void **state) {
        Pool p;

        pool_init(&p, &limits);
        for (pid_t pid = 1; pid <= 3; pid++) {
                assert_true(pool_may_handle(&p));
                assert_non_null(pool_add(&p, pid, POOL_SLOT_HANDLING, LANGUAGE_NODEJS, -1));
        }
        assert_false(pool_may_handle(&p));
        pool_done(&p);
}

static void test_retired_slots_count_for_nothing(void **state) {
        Pool p;
        pid_t pid = 100, stale[4];
        size_t n_stale = 0;

        pool_init(&p, &limits);
        (void) fill(&p, &pid);
        for (size_t i = 0; i < p.n_slots; i++)
                p.slots[i].state = POOL_SLOT_RETIRED;
        assert_null(
                pool_take_idle(&p, LANGUAGE_PYTHON3, /* want_preloaded= */ true, 0, 0, stale, 4, &n_stale));
        assert_int_equal(pool_count_handlers(&p), 0);
        assert_int_equal(fill(&p, &pid), 3); /* replaced, and no more than the size */
        pool_done(&p);
}

static void test_empty_size_prepares_nothing(void **state) {
        PoolLimits none = { .handlers_max = 1, .cpus = 2 };
        Pool p;

        pool_init(&p, &none);
        assert_int_equal(pool_next_to_prepare(&p), _LANGUAGE_INVALID);
        pool_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fills_to_size_and_no_further),
                cmocka_unit_test(test_taken_slot_is_never_idle_again),
                cmocka_unit_test(test_stale_slots_are_not_handed_out),
                cmocka_unit_test(test_a_preloaded_slot_is_taken_before_a_light_one),
                cmocka_unit_test(test_other_code_takes_a_light_slot_first),
                cmocka_unit_test(test_no_preparing_while_cpus_are_busy),
                cmocka_unit_test(test_handlers_are_bounded),
                cmocka_unit_test(test_retired_slots_count_for_nothing),
                cmocka_unit_test(test_empty_size_prepares_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
