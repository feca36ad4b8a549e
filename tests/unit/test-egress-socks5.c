/* Unit tests of src/egress/socks5.c: the messages to an upstream SOCKS5 proxy and the parsing of its
 * answers, which are untrusted: every short, malformed and refusing form. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "egress/socks5.h"

static void test_greeting(void **state) {
        size_t n;
        const uint8_t *g = socks5_greeting(&n);

        assert_int_equal(n, 3);
        assert_memory_equal(g, ((const uint8_t[]){ 5, 1, 0 }), 3); /* one method: no authentication */
}

static void test_request(void **state) {
        uint8_t buf[SOCKS5_REQUEST_MAX];
        char name[300];

        assert_int_equal(socks5_format_request("192.0.2.1", 443, buf), 10);
        assert_memory_equal(buf, ((const uint8_t[]){ 5, 1, 0, 1, 192, 0, 2, 1, 0x01, 0xbb }), 10);

        assert_int_equal(socks5_format_request("2001:db8::1", 80, buf), 22);
        assert_memory_equal(buf, ((const uint8_t[]){ 5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8 }), 8);
        assert_int_equal(buf[20], 0);
        assert_int_equal(buf[21], 80);

        /* a name goes as a name (ATYP 3): the proxy resolves it */
        assert_int_equal(socks5_format_request("example.com", 8080, buf), 4 + 1 + 11 + 2);
        assert_memory_equal(buf, ((const uint8_t[]){ 5, 1, 0, 3, 11, 'e', 'x' }), 7);
        assert_int_equal(buf[16], 0x1f);
        assert_int_equal(buf[17], 0x90);

        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        assert_int_equal(socks5_format_request(name, 80, buf), -ENAMETOOLONG);
        name[255] = '\0';
        assert_int_equal(socks5_format_request(name, 80, buf), 4 + 1 + 255 + 2);
}

static void test_method(void **state) {
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 5 }, 1), 0); /* incomplete */
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 5, 0 }, 2), 2);
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 5, 0, 9 }, 3), 2); /* only its own bytes */
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 5, 2 }, 2), -EACCES); /* wants a password */
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 5, 0xff }, 2), -EACCES);
        assert_int_equal(socks5_parse_method((const uint8_t[]){ 4, 0 }, 2), -EACCES); /* not SOCKS5 */
}

static void test_reply(void **state) {
        static const uint8_t v4[] = { 5, 0, 0, 1, 10, 0, 0, 1, 0, 80, 'x' };
        static const uint8_t v6[22] = { 5, 0, 0, 4 };
        static const uint8_t name[] = { 5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 80 };
        uint8_t rep = 0;

        assert_int_equal(socks5_parse_reply(v4, 4, &rep), 0);
        assert_int_equal(socks5_parse_reply(v4, 9, &rep), 0);
        assert_int_equal(socks5_parse_reply(v4, sizeof(v4), &rep),
                         10); /* what follows is the destination's */
        assert_int_equal(socks5_parse_reply(v6, 21, &rep), 0);
        assert_int_equal(socks5_parse_reply(v6, 22, &rep), 22);
        assert_int_equal(socks5_parse_reply(name, sizeof(name), &rep), 10);
        assert_int_equal(socks5_parse_reply(name, 9, &rep), 0);

        assert_int_equal(socks5_parse_reply((const uint8_t[]){ 4, 0, 0, 1, 0 }, 5, &rep), -EBADMSG);
        assert_int_equal(socks5_parse_reply((const uint8_t[]){ 5, 0, 0, 2, 0 }, 5, &rep), -EBADMSG);
        assert_int_equal(socks5_parse_reply((const uint8_t[]){ 5, 0, 0, 0, 0 }, 5, &rep), -EBADMSG);
        assert_int_equal(rep, 0); /* untouched but for a refusal */

        assert_int_equal(socks5_parse_reply((const uint8_t[]){ 5, 2, 0, 1, 0 }, 5, &rep), -ECONNREFUSED);
        assert_int_equal(rep, SOCKS5_REP_NOT_ALLOWED);
        assert_string_equal(socks5_reply_to_string(rep), "connection not allowed by ruleset");
        assert_int_equal(socks5_parse_reply((const uint8_t[]){ 5, 5, 0, 9, 0 }, 5, &rep), -ECONNREFUSED);
        assert_string_equal(socks5_reply_to_string(rep), "connection refused");
        assert_string_equal(socks5_reply_to_string(0), "unknown error");
        assert_string_equal(socks5_reply_to_string(9), "unknown error");
        assert_string_equal(socks5_reply_to_string(255), "unknown error");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_greeting),
                cmocka_unit_test(test_request),
                cmocka_unit_test(test_method),
                cmocka_unit_test(test_reply),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
