/* test-parse: src/common/parse.c. Every parser takes the whole string, refuses signs, spaces, junk,
 * empty input and overflow, and leaves *ret untouched on failure (parse.h). */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/parse.h"

#define SENTINEL64 UINT64_C(0xdeadbeefcafef00d)
#define SENTINEL32 UINT32_C(0xdeadbeef)

typedef struct Case64 {
        const char *input;
        uint64_t expected;
} Case64;

typedef struct Refused {
        const char *input;
        int error; /* -EINVAL or -ERANGE */
} Refused;

/* Calls parse on every refused input and checks the error and that *ret kept its sentinel. */
static void check_refused64(int (*parse)(const char *, uint64_t *), const Refused *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                uint64_t v = SENTINEL64;
                int r = parse(cases[i].input, &v);

                if (r != cases[i].error)
                        fail_msg("'%s': expected %d, got %d (value %" PRIu64 ")", cases[i].input,
                                 cases[i].error, r, v);
                if (v != SENTINEL64)
                        fail_msg("'%s': *ret changed to %" PRIu64 " on failure", cases[i].input, v);
        }
}

static void check_accepted64(int (*parse)(const char *, uint64_t *), const Case64 *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                uint64_t v = SENTINEL64;
                int r = parse(cases[i].input, &v);

                if (r != 0)
                        fail_msg("'%s': expected success, got %d", cases[i].input, r);
                if (v != cases[i].expected)
                        fail_msg("'%s': expected %" PRIu64 ", got %" PRIu64, cases[i].input,
                                 cases[i].expected, v);
        }
}

static void test_parse_uint64(void **state) {
        static const Case64 ok[] = {
                { "0", 0 },
                { "42", 42 },
                { "007", 7 },
                { "18446744073709551615", UINT64_MAX },
        };
        static const Refused bad[] = {
                { "", -EINVAL },
                { "-1", -EINVAL },
                { "+1", -EINVAL },
                { " 1", -EINVAL },
                { "1 ", -EINVAL },
                { "1x", -EINVAL },
                { "0x10", -EINVAL },
                { "18446744073709551616", -ERANGE },
                { "99999999999999999999", -ERANGE },
        };
        uint64_t v = SENTINEL64;

        check_accepted64(parse_uint64, ok, ELEMENTSOF(ok));
        check_refused64(parse_uint64, bad, ELEMENTSOF(bad));
        assert_int_equal(parse_uint64(NULL, &v), -EINVAL);
        assert_true(v == SENTINEL64);
}

static void test_parse_uint32(void **state) {
        static const struct {
                const char *input;
                uint32_t expected;
        } ok[] = {
                { "0", 0 },
                { "10000", 10000 },
                { "4294967295", UINT32_MAX },
        };
        static const Refused bad[] = {
                { "", -EINVAL },
                { "-1", -EINVAL },
                { " 1", -EINVAL },
                { "1k", -EINVAL },
                { "4294967296", -ERANGE },
                { "18446744073709551615", -ERANGE },
                { "99999999999999999999", -ERANGE },
        };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                uint32_t v = SENTINEL32;

                assert_int_equal(parse_uint32(ok[i].input, &v), 0);
                assert_int_equal(v, ok[i].expected);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint32_t v = SENTINEL32;
                int r = parse_uint32(bad[i].input, &v);

                if (r != bad[i].error)
                        fail_msg("'%s': expected %d, got %d", bad[i].input, bad[i].error, r);
                if (v != SENTINEL32)
                        fail_msg("'%s': *ret changed to %u on failure", bad[i].input, v);
        }
}

static void test_parse_size(void **state) {
        static const Case64 ok[] = {
                { "0", 0 },
                { "512", 512 },
                { "512B", 512 },
                { "64K", UINT64_C(64) << 10 },
                { "64KB", UINT64_C(64) << 10 },
                { "64KiB", UINT64_C(64) << 10 },
                { "512M", UINT64_C(512) << 20 },
                { "64MiB", UINT64_C(64) << 20 },
                { "2G", UINT64_C(2) << 30 },
                { "2GiB", UINT64_C(2) << 30 },
                { "1T", UINT64_C(1) << 40 },
                { "18014398509481983K", UINT64_MAX - 1023 }, /* the largest K value that fits */
                { "18446744073709551615", UINT64_MAX },
        };
        static const Refused bad[] = {
                { "", -EINVAL },
                { "-1", -EINVAL },
                { "+1", -EINVAL },
                { " 5", -EINVAL },
                { "5 ", -EINVAL },
                { "5 K", -EINVAL },
                { "5X", -EINVAL },
                { "K", -EINVAL },
                { "1.5G", -EINVAL },
                { "64Mi", -EINVAL },
                { "99999999999999999999", -ERANGE },
                { "18446744073709551616", -ERANGE },
                { "18014398509481984K", -ERANGE }, /* 2^54 KiB = 2^64 bytes */
                { "17179869184G", -ERANGE },       /* 2^34 GiB = 2^64 bytes */
                { "16777216T", -ERANGE },          /* 2^24 TiB = 2^64 bytes */
        };

        check_accepted64(parse_size, ok, ELEMENTSOF(ok));
        check_refused64(parse_size, bad, ELEMENTSOF(bad));
}

static void test_parse_duration(void **state) {
        static const Case64 ok[] = {
                { "0", 0 },
                { "5", 5000000 },
                { "2.5", 2500000 },
                { "0.001", 1000 },
                { "0.000001", 1 },
                { "500ms", 500000 },
                { "1.5ms", 1500 },
                { "3s", 3000000 },
                { "250us", 250 },
                { "1min", 60000000 },
                { "1.5min", 90000000 },
                { "18446744073709.551615", UINT64_MAX }, /* exactly the largest value */
        };
        static const Refused bad[] = {
                { "", -EINVAL },
                { "-1", -EINVAL },
                { "+1", -EINVAL },
                { " 5", -EINVAL },
                { "5 ", -EINVAL },
                { "1.", -EINVAL },
                { ".5", -EINVAL },
                { "1.5.5", -EINVAL },
                { "5h", -EINVAL },
                { "5S", -EINVAL },
                { "s", -EINVAL },
                { "99999999999999999999", -ERANGE },
                { "18446744073710", -ERANGE }, /* whole seconds past UINT64_MAX usec */
                { "307445734562min", -ERANGE },
                /* The fraction alone pushes the sum past UINT64_MAX: it must not wrap around. */
                { "18446744073709.551616", -ERANGE },
                { "18446744073709.6", -ERANGE },
                { "18446744073709551.616ms", -ERANGE },
                { "307445734561.9min", -ERANGE },
        };

        check_accepted64(parse_duration, ok, ELEMENTSOF(ok));
        check_refused64(parse_duration, bad, ELEMENTSOF(bad));
}

static void test_parse_percent(void **state) {
        static const struct {
                const char *input;
                uint32_t expected;
        } ok[] = {
                { "1%", 1 }, { "50%", 50 }, { "100%", 100 }, { "150%", 150 }, { "100000%", 100000 },
        };
        static const Refused bad[] = {
                { "", -EINVAL },
                { "%", -EINVAL },
                { "50", -EINVAL },
                { "-5%", -EINVAL },
                { " 50%", -EINVAL },
                { "50 %", -EINVAL },
                { "50%%", -EINVAL },
                { "5.5%", -EINVAL },
                { "0%", -ERANGE },
                { "100001%", -ERANGE },
                { "99999999999999999999%", -ERANGE },
        };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                uint32_t v = SENTINEL32;

                assert_int_equal(parse_percent(ok[i].input, &v), 0);
                assert_int_equal(v, ok[i].expected);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint32_t v = SENTINEL32;
                int r = parse_percent(bad[i].input, &v);

                if (r != bad[i].error)
                        fail_msg("'%s': expected %d, got %d", bad[i].input, bad[i].error, r);
                if (v != SENTINEL32)
                        fail_msg("'%s': *ret changed to %u on failure", bad[i].input, v);
        }
}

static void test_parse_boolean(void **state) {
        static const char *const yes[] = { "1", "yes", "YES", "Yes", "true", "TRUE", "on", "On" };
        static const char *const no[] = { "0", "no", "NO", "false", "False", "off", "OFF" };
        static const char *const junk[] = { "", "2", "yess", " yes", "yes ", "of", "truee", "-1", "null" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                bool b = false;

                assert_int_equal(parse_boolean(yes[i], &b), 0);
                assert_true(b);
        }
        for (size_t i = 0; i < ELEMENTSOF(no); i++) {
                bool b = true;

                assert_int_equal(parse_boolean(no[i], &b), 0);
                assert_false(b);
        }
        for (size_t i = 0; i < ELEMENTSOF(junk); i++) {
                bool b = true;

                if (parse_boolean(junk[i], &b) != -EINVAL)
                        fail_msg("'%s' accepted as a boolean", junk[i]);
                assert_true(b); /* untouched */
                b = false;
                assert_int_equal(parse_boolean(junk[i], &b), -EINVAL);
                assert_false(b);
        }
        {
                bool b = true;

                assert_int_equal(parse_boolean(NULL, &b), -EINVAL);
                assert_true(b);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_uint64),  cmocka_unit_test(test_parse_uint32),
                cmocka_unit_test(test_parse_size),    cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_percent), cmocka_unit_test(test_parse_boolean),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
