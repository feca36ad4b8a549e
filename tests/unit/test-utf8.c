/* test-utf8: src/common/utf8.c. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/utf8.h"

#define VALID(s) utf8_is_valid(s, sizeof(s) - 1)

static void test_valid(void **state) {
        assert_true(VALID(""));
        assert_true(VALID("plain ascii"));
        assert_true(VALID("a\0b"));                 /* NUL is a character */
        assert_true(VALID("\xc3\xa9"));             /* é */
        assert_true(VALID("\xe4\xb8\xad"));         /* 中 */
        assert_true(VALID("\xf0\x9f\x98\x80"));     /* 😀, outside the BMP */
        assert_true(VALID("\xf4\x8f\xbf\xbf"));     /* U+10FFFF */
}

static void test_invalid(void **state) {
        assert_false(VALID("\xff"));
        assert_false(VALID("\xc0\xaf"));            /* overlong '/' */
        assert_false(VALID("\xe0\x80\xaf"));        /* overlong */
        assert_false(VALID("\xed\xa0\x80"));        /* surrogate U+D800 */
        assert_false(VALID("\xf4\x90\x80\x80"));    /* above U+10FFFF */
        assert_false(VALID("\xe4\xb8"));            /* cut short */
        assert_false(VALID("\x80"));                /* lone continuation */
}

static void test_sanitize_replaces_each_bad_byte(void **state) {
        static const char in[] = "a\0b\xff\xe4\xb8";
        char *out = NULL;
        size_t len = 0;

        assert_int_equal(utf8_sanitize(in, sizeof(in) - 1, &out, &len), 0);
        assert_int_equal(len, 3 + 3 * 3);
        assert_memory_equal(out, "a\0b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", len);
        assert_int_equal(out[len], '\0');
        assert_true(utf8_is_valid(out, len));
        free(out);
}

static void test_sanitize_keeps_valid_text(void **state) {
        static const char in[] = "h\xc3\xa9llo \xf0\x9f\x98\x80";
        char *out = NULL;
        size_t len = 0;

        assert_int_equal(utf8_sanitize(in, sizeof(in) - 1, &out, &len), 0);
        assert_int_equal(len, sizeof(in) - 1);
        assert_memory_equal(out, in, len);
        free(out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_sanitize_replaces_each_bad_byte),
                cmocka_unit_test(test_sanitize_keeps_valid_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
