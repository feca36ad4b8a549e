/* test-config: src/common/config.c. The defaults are the documented ones (DESIGN §1, difysandbox.conf(5)),
 * and config_done() frees everything and leaves a zeroed Config (the memcheck variant of this test, run
 * under valgrind by meson, fails on any leak). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/config.h"

static void test_config_defaults(void **state) {
        Config cfg;

        memset(&cfg, 0xaa, sizeof(cfg)); /* whatever was there before must not survive */
        assert_int_equal(config_init_defaults(&cfg), 0);

        /* upstream dify-sandbox keys; no key until one is configured: upstream's public default
         * "dify-sandbox" is never in force by itself (issue 14) */
        assert_null(cfg.api_key);
        assert_int_equal(cfg.port, 8194);
        assert_false(cfg.debug);
        assert_int_equal(cfg.max_workers, 4);
        assert_int_equal(cfg.max_requests, 50);
        assert_true(cfg.worker_timeout_usec == UINT64_C(5000000));
        assert_true(cfg.enable_network);
        assert_false(cfg.enable_preload);
        assert_non_null(cfg.python_path);
        assert_true(cfg.python_path[0] == '/');
        assert_non_null(cfg.nodejs_path);
        assert_true(cfg.nodejs_path[0] == '/');
        assert_non_null(cfg.allowed_syscalls); /* an empty list, not NULL */
        assert_null(cfg.allowed_syscalls[0]);

        /* ours */
        assert_true(cfg.memory_max == UINT64_C(512) * 1024 * 1024);
        assert_int_equal(cfg.cpu_quota_percent, 100);
        assert_int_equal(cfg.tasks_max, 64);
        assert_true(cfg.output_max == UINT64_C(4) * 1024 * 1024);
        assert_true(cfg.tmp_size == UINT64_C(64) * 1024 * 1024);
        assert_int_equal(cfg.open_files_max, 256);
        assert_int_equal(cfg.uid_min, 10000);
        assert_int_equal(cfg.uid_max, 10999);
        assert_true(cfg.cpu_time_usec > 0);
        /* a Dify input of 10 MB of text is 13.4 MB of base64 in the code: it fits */
        assert_true(cfg.code_max == UINT64_C(16) * 1024 * 1024);
        /* with worker_timeout, below Dify's 60 s read timeout */
        assert_true(cfg.queue_timeout_usec == UINT64_C(50) * 1000000);
        assert_true(cfg.queue_timeout_usec + cfg.worker_timeout_usec < UINT64_C(60) * 1000000);
        assert_string_equal(cfg.state_dir, "/run/difysandbox");
        assert_string_equal(cfg.runtime_dir, "/var/lib/difysandbox");
        assert_non_null(cfg.enter_library);
        assert_true(cfg.enter_library[0] == '/');

        config_done(&cfg);
}

/* Every field of a Config after config_done(): owned pointers NULL, numbers zero. Field by field, since
 * padding bytes of a struct assignment are unspecified. */
static void assert_config_zeroed(const Config *cfg) {
        assert_null(cfg->api_key);
        assert_null(cfg->python_path);
        assert_null(cfg->nodejs_path);
        assert_null(cfg->python_pip_mirror_url);
        assert_null(cfg->allowed_syscalls);
        assert_null(cfg->proxy_socks5);
        assert_null(cfg->proxy_http);
        assert_null(cfg->proxy_https);
        assert_null(cfg->state_dir);
        assert_null(cfg->runtime_dir);
        assert_null(cfg->enter_library);
        assert_int_equal(cfg->port, 0);
        assert_int_equal(cfg->max_workers, 0);
        assert_true(cfg->memory_max == 0);
        assert_int_equal(cfg->uid_min, 0);
        assert_int_equal(cfg->uid_max, 0);
        assert_false(cfg->enable_network);
}

static void test_config_done_frees_and_zeroes(void **state) {
        Config cfg;

        assert_int_equal(config_init_defaults(&cfg), 0);
        config_done(&cfg);
        assert_config_zeroed(&cfg);

        /* A second config_done() on the zeroed struct is harmless (error paths may call it twice). */
        config_done(&cfg);
        assert_config_zeroed(&cfg);
}

static void test_config_done_frees_allowed_syscalls(void **state) {
        Config cfg;

        assert_int_equal(config_init_defaults(&cfg), 0);
        /* As a loader would fill it: each name and the array are owned by the Config. */
        free(cfg.allowed_syscalls);
        cfg.allowed_syscalls = calloc(3, sizeof(char *));
        assert_non_null(cfg.allowed_syscalls);
        cfg.allowed_syscalls[0] = strdup("getitimer");
        cfg.allowed_syscalls[1] = strdup("setitimer");
        assert_non_null(cfg.allowed_syscalls[0]);
        assert_non_null(cfg.allowed_syscalls[1]);
        config_done(&cfg); /* the memcheck run fails if the names leak */
        assert_null(cfg.allowed_syscalls);
}

static void test_config_defaults_are_independent(void **state) {
        Config a, b;

        /* Two configs own separate strings: freeing one leaves the other intact. */
        assert_int_equal(config_init_defaults(&a), 0);
        assert_int_equal(config_init_defaults(&b), 0);
        assert_ptr_not_equal(a.state_dir, b.state_dir);
        config_done(&a);
        assert_string_equal(b.state_dir, "/run/difysandbox");
        config_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_defaults),
                cmocka_unit_test(test_config_done_frees_and_zeroes),
                cmocka_unit_test(test_config_done_frees_allowed_syscalls),
                cmocka_unit_test(test_config_defaults_are_independent),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
