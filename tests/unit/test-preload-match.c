/* Unit tests of src/runtime/preload-match.c: which code the runner hands a preloaded run. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/preload-match.h"

static char *const python_preloads[] = { "jinja2", "numpy", "pandas", NULL };

static bool wants(const char *code, char *const *modules) {
        return code_names_module(code, strlen(code), modules);
}

static void test_imports_name_a_module(void **state) {
        assert_true(wants("import pandas as pd\nprint(pd.__version__)", python_preloads));
        assert_true(wants("from numpy import array", python_preloads));
        assert_true(wants("def main(x):\n    import jinja2\n    return {}", python_preloads));
        assert_true(wants("import os,numpy", python_preloads));
        assert_true(wants("numpy", python_preloads)); /* the whole text */
}

static void test_other_code_names_none(void **state) {
        assert_false(wants("print(1)", python_preloads));
        assert_false(wants("import json\nprint(json.dumps({}))", python_preloads));
        assert_false(wants("import mypandas", python_preloads));      /* a longer word */
        assert_false(wants("import pandas_helper", python_preloads)); /* likewise */
        assert_false(wants("numpy2 = 1", python_preloads));
        assert_false(wants("", python_preloads));
}

static void test_a_later_occurrence_counts(void **state) {
        /* the first hit is inside a word; the second stands alone */
        assert_true(wants("mypandas = 1\nimport pandas", python_preloads));
}

static void test_dotted_modules_by_their_top_level_name(void **state) {
        char *const dotted[] = { "numpy.linalg", NULL };

        assert_true(wants("import numpy as np", dotted));
        assert_false(wants("import linalg", dotted));
}

static void test_node_requires(void **state) {
        char *const node[] = { "lodash", NULL };

        assert_true(wants("const _ = require('lodash');", node));
        assert_false(wants("console.log(1)", node));
}

static void test_no_modules_names_nothing(void **state) {
        char *const none[] = { NULL };

        assert_false(wants("import pandas", none));
        assert_false(code_names_module("import pandas", 13, NULL));
        assert_false(code_names_module(NULL, 0, python_preloads));
}

/* The length bounds the search: a name past it is not seen (the code is not NUL-terminated on the wire). */
static void test_the_length_bounds_the_search(void **state) {
        const char *code = "print(1)\nimport pandas";

        assert_false(code_names_module(code, strlen("print(1)\nimport pan"), python_preloads));
        assert_true(code_names_module(code, strlen(code), python_preloads));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_imports_name_a_module),
                cmocka_unit_test(test_other_code_names_none),
                cmocka_unit_test(test_a_later_occurrence_counts),
                cmocka_unit_test(test_dotted_modules_by_their_top_level_name),
                cmocka_unit_test(test_node_requires),
                cmocka_unit_test(test_no_modules_names_nothing),
                cmocka_unit_test(test_the_length_bounds_the_search),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
