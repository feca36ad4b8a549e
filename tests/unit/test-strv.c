/* Unit tests of src/common/strv.c: the string lists every module frees the same way. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strv.h"

static char **make(size_t n) {
        char **l = calloc(n + 1, sizeof(char *));

        assert_non_null(l);
        for (size_t i = 0; i < n; i++) {
                l[i] = malloc(8);
                assert_non_null(l[i]);
                (void) snprintf(l[i], 8, "item%zu", i);
        }
        return l;
}

static void test_free_is_null_safe_and_returns_null(void **state) {
        char **l = make(3);

        assert_null(strv_free(NULL));
        l = strv_free(l); /* every item and the list: the memcheck run would report a leak */
        assert_null(l);
}

static void test_cleanup_frees(void **state) {
        {
                _cleanup_strv_free_ char **l = make(2);
                assert_int_equal(strv_length(l), 2);
        }
        {
                _cleanup_strv_free_ char **none = NULL; /* a NULL list is fine too */
                (void) none;
        }
}

static void test_length(void **state) {
        char **l = make(5);
        char *empty[] = { NULL };

        assert_int_equal(strv_length(NULL), 0);
        assert_int_equal(strv_length(empty), 0);
        assert_int_equal(strv_length(l), 5);
        (void) strv_free(l);
}

static void test_contains(void **state) {
        char **l = make(3);

        assert_true(strv_contains(l, "item0"));
        assert_true(strv_contains(l, "item2"));
        assert_false(strv_contains(l, "item3"));
        assert_false(strv_contains(l, "item")); /* whole items only */
        assert_false(strv_contains(NULL, "item0"));
        (void) strv_free(l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_free_is_null_safe_and_returns_null),
                cmocka_unit_test(test_cleanup_frees),
                cmocka_unit_test(test_length),
                cmocka_unit_test(test_contains),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
