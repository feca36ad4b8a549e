/* Unit tests for src/manager/redact.c: no user or password of a URL survives in printed text, and text
 * without one is left as it was. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manager/redact.h"

static void check(const char *in, const char *want) {
        char *s = strdup(in);

        assert_non_null(s);
        assert_string_equal(redact_url_credentials(s), want);
        free(s);
}

static void test_credentials_are_masked(void **state) {
        check("--index-url 'https://alice:s3cret@pypi.example/simple' is not valid",
              "--index-url 'https://***@pypi.example/simple' is not valid");
        check("http://USER:PASSWORD@proxy:3128", "http://***@proxy:3128");
        check("token only: https://tok@host/x", "token only: https://***@host/x");
        check("a@b in the password: http://u:p@ss@h:1/ then http://v:q@h2",
              "a@b in the password: http://***@h:1/ then http://***@h2");
        check("short: http://a:b@h", "short: http://***@h"); /* "a:b" is three bytes, as the mask */
        check("shorter: http://a@h", "shorter: http://*@h");
        check("Looking in indexes: https://alice:****@pypi.example/simple",
              "Looking in indexes: https://***@pypi.example/simple");
}

static void test_text_without_credentials_is_unchanged(void **state) {
        check("https://pypi.org/simple", "https://pypi.org/simple");
        check("mail me at a@b.example, see https://h/p?a=b@c",
              "mail me at a@b.example, see https://h/p?a=b@c");
        check("", "");
        check("no url at all: user:pass@host", "no url at all: user:pass@host");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_credentials_are_masked),
                cmocka_unit_test(test_text_without_credentials_is_unchanged),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
