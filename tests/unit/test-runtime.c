/* Unit tests for src/runtime/runtime.c: the language descriptors are the one place a language is
 * described (docs/hacking.md, "Adding a language"), so what callers read from them must agree with the rest:
 * every enum value has a descriptor that names itself, the accepted names that usage texts print
 * (RUNTIME_LANGUAGE_NAMES) list exactly the descriptors' names, and the configuration fields a
 * descriptor points at are the ones its configuration keys set. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "config/config-file.h"
#include "common/config.h"
#include "runtime/runtime.h"

static void test_every_language_has_a_descriptor(void **state) {
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const Runtime *rt = runtime_get(l);

                assert_non_null(rt);
                assert_int_equal(rt->language, l);
                assert_non_null(rt->name);
                assert_int_equal(language_from_string(rt->name), l);
                assert_string_equal(language_to_string(l), rt->name);
                for (Language m = 0; m < l; m++)
                        assert_string_not_equal(runtime_get(m)->name, rt->name);

                assert_non_null(rt->argv_tail);
                assert_non_null(rt->network_argv_tail);
                assert_non_null(rt->environment);
                assert_non_null(rt->rules);
                assert_true(rt->n_rules > 0);
                assert_non_null(rt->interpreter_key);
                assert_true(rt->package_tool >= 0 && rt->package_tool < _PACKAGE_TOOL_MAX);
                assert_non_null(rt->package_tool_name);
                assert_non_null(rt->install_args);
                assert_non_null(rt->packages_subdir);
                assert_null(strchr(rt->packages_subdir, '/'));
                assert_true(rt->requirements >= 0 && rt->requirements < _REQUIREMENTS_GRAMMAR_MAX);
                /* The tree builder is told the language by the name the API uses. */
                assert_non_null(rt->tree_builder);
                assert_non_null(strstr(rt->tree_builder, rt->name));
        }
}

static void test_unknown_languages(void **state) {
        assert_null(runtime_get(_LANGUAGE_MAX));
        assert_null(runtime_get(_LANGUAGE_INVALID));
        assert_null(language_to_string(_LANGUAGE_MAX));
        assert_int_equal(language_from_string(NULL), _LANGUAGE_INVALID);
        assert_int_equal(language_from_string(""), _LANGUAGE_INVALID);
        assert_int_equal(language_from_string("python"), _LANGUAGE_INVALID);
        assert_int_equal(language_from_string("Python3"), _LANGUAGE_INVALID);
        assert_int_equal(language_from_string("python3 "), _LANGUAGE_INVALID);
}

/* "a", "a or b", "a, b or c": the descriptors' names in the enum's order. */
static void test_language_names_list_every_descriptor(void **state) {
        char expected[256] = "";

        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const char *sep = l == 0 ? "" : l + 1 == _LANGUAGE_MAX ? " or " : ", ";

                assert_true(strlen(expected) + strlen(sep) + strlen(runtime_get(l)->name) <
                            sizeof(expected));
                strcat(expected, sep);
                strcat(expected, runtime_get(l)->name);
        }
        assert_string_equal(RUNTIME_LANGUAGE_NAMES, expected);
}

/* Loads "KEY: VALUE" on top of the defaults, in a file of its own. */
static void load_one(Config *cfg, const char *key, const char *value) {
        char path[] = "/tmp/test-runtime-XXXXXX";
        ConfigError err = { 0 };
        int fd = mkstemp(path);
        FILE *f;

        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        fprintf(f, "%s: %s\n", key, value);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(config_init_defaults(cfg), 0);
        if (config_load(cfg, path, "", NULL, &err) < 0)
                fail_msg("%s: %s: %s", key, value, err.message ? err.message : "?");
        config_error_done(&err);
        (void) unlink(path);
}

/* The Config field a descriptor reads is the one its key sets, and no other language's. */
static void test_config_fields_follow_the_keys(void **state) {
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const Runtime *rt = runtime_get(l);
                _cleanup_free_ char *pool_key = NULL, *preload_key = NULL;
                Config cfg;

                load_one(&cfg, rt->interpreter_key, "/bin/sh"); /* an executable every host has */
                for (Language m = 0; m < _LANGUAGE_MAX; m++)
                        if (m == l)
                                assert_string_equal(runtime_interpreter(runtime_get(m), &cfg), "/bin/sh");
                        else
                                assert_string_not_equal(runtime_interpreter(runtime_get(m), &cfg),
                                                        "/bin/sh");
                config_done(&cfg);

                assert_true(asprintf(&pool_key, "pool_size.%s", rt->name) > 0);
                load_one(&cfg, pool_key, "7");
                for (Language m = 0; m < _LANGUAGE_MAX; m++)
                        if (m == l)
                                assert_int_equal(runtime_pool_size(runtime_get(m), &cfg),
                                                 cfg.prewarm ? 7 : 0);
                        else
                                assert_int_not_equal(runtime_pool_size(runtime_get(m), &cfg), 7);
                cfg.prewarm = false;
                assert_int_equal(runtime_pool_size(rt, &cfg), 0); /* prewarm off: no pool at all */
                config_done(&cfg);

                assert_true(asprintf(&preload_key, "pool_preload.%s", rt->name) > 0);
                load_one(&cfg, preload_key, "[testmodule]");
                for (Language m = 0; m < _LANGUAGE_MAX; m++) {
                        char *const *modules = runtime_pool_preload(runtime_get(m), &cfg);
                        bool listed =
                                modules && modules[0] && streq(modules[0], "testmodule") && !modules[1];

                        assert_true(listed == (m == l));
                }
                config_done(&cfg);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_language_has_a_descriptor),
                cmocka_unit_test(test_unknown_languages),
                cmocka_unit_test(test_language_names_list_every_descriptor),
                cmocka_unit_test(test_config_fields_follow_the_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
