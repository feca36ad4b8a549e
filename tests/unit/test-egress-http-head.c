/* Unit tests of src/egress/http-head.c: the request heads a run sends to its egress relay (untrusted), the
 * status line of an upstream proxy's answer, and authorities. Every malformed form the parser refuses is a
 * row of a table, with the reason the run is given in its 400 answer. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "egress/http-head.h"

/* clang-format off */
static const struct {
        const char *head;
        size_t len; /* 0: strlen(head) */
        const char *reason;
} malformed[] = {
        /* head                                                  len  reason */
        { "GET http://a/ HTTP/1.1\r\nX: \0\r\n\r\n",              29, "NUL byte in the request head" },
        { "GET http://a/ HTTP/1.1",                               0,  "no request line" },
        { "\r\n\r\n",                                             0,  "no request line" },
        { "GET\r\n\r\n",                                          0,  "malformed request line" },
        { "GET http://a/\r\n\r\n",                                0,  "malformed request line" },
        { "GET http://a/ HTTP/1.1 extra\r\n\r\n",                 0,  "malformed request line" },
        { "GET  http://a/ HTTP/1.1\r\n\r\n",                      0,  "malformed request line" },
        { " http://a/ HTTP/1.1\r\n\r\n",                          0,  "malformed request line" },
        { "GET  HTTP/1.1\r\n\r\n",                                0,  "malformed request line" },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG http://a/ HTTP/1.1\r\n\r\n", 0, "malformed request line" },
        { "GE(T http://a/ HTTP/1.1\r\n\r\n",                      0,  "malformed method" },
        { "G\x80T http://a/ HTTP/1.1\r\n\r\n",                    0,  "malformed method" },
        { "GET http://a/\x01 HTTP/1.1\r\n\r\n",                   0,  "control characters, spaces or non-ASCII bytes in the request target" },
        { "GET http://a/\t HTTP/1.1\r\n\r\n",                     0,  "control characters, spaces or non-ASCII bytes in the request target" },
        { "GET http://a/\x7f HTTP/1.1\r\n\r\n",                   0,  "control characters, spaces or non-ASCII bytes in the request target" },
        { "GET http://a/\xc3\xa9 HTTP/1.1\r\n\r\n",               0,  "control characters, spaces or non-ASCII bytes in the request target" },
        { "GET http://a/ HTTP/2.0\r\n\r\n",                       0,  "only HTTP/1.0 and HTTP/1.1 are spoken" },
        { "GET http://a/ HTTP/1.2\r\n\r\n",                       0,  "only HTTP/1.0 and HTTP/1.1 are spoken" },
        { "GET http://a/ http/1.1\r\n\r\n",                       0,  "only HTTP/1.0 and HTTP/1.1 are spoken" },
        { "CONNECT example.com HTTP/1.1\r\n\r\n",                 0,  "CONNECT needs host:port" },
        { "CONNECT example.com:0 HTTP/1.1\r\n\r\n",               0,  "CONNECT needs host:port" },
        { "CONNECT example.com:65536 HTTP/1.1\r\n\r\n",           0,  "CONNECT needs host:port" },
        { "CONNECT example.com:44x HTTP/1.1\r\n\r\n",             0,  "CONNECT needs host:port" },
        { "CONNECT example.com: HTTP/1.1\r\n\r\n",                0,  "CONNECT needs host:port" },
        { "CONNECT :443 HTTP/1.1\r\n\r\n",                        0,  "CONNECT needs host:port" },
        { "CONNECT ::1:443 HTTP/1.1\r\n\r\n",                     0,  "CONNECT needs host:port" },
        { "CONNECT [::1:443 HTTP/1.1\r\n\r\n",                    0,  "CONNECT needs host:port" },
        { "CONNECT [::1]x:443 HTTP/1.1\r\n\r\n",                  0,  "CONNECT needs host:port" },
        { "CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n",               0,  "CONNECT needs host:port" },
        { "CONNECT bad_host!:443 HTTP/1.1\r\n\r\n",               0,  "CONNECT needs host:port" },
        { "GET https://a/ HTTP/1.1\r\n\r\n",                      0,  "https:// URLs go through CONNECT, not as plain requests" },
        { "GET /index.html HTTP/1.1\r\n\r\n",                     0,  "this is a proxy: the request target must be an absolute http:// URL" },
        { "GET ftp://a/ HTTP/1.1\r\n\r\n",                        0,  "only http:// URLs can be forwarded" },
        { "GET a/b HTTP/1.1\r\n\r\n",                             0,  "only http:// URLs can be forwarded" },
        { "GET http:///path HTTP/1.1\r\n\r\n",                    0,  "malformed host or port in the URL" },
        { "GET http://a:0/ HTTP/1.1\r\n\r\n",                     0,  "malformed host or port in the URL" },
        { "GET http://a:65536/ HTTP/1.1\r\n\r\n",                 0,  "malformed host or port in the URL" },
        { "GET http://[::1/ HTTP/1.1\r\n\r\n",                    0,  "malformed host or port in the URL" },
        { "GET http://user@/ HTTP/1.1\r\n\r\n",                   0,  "malformed host or port in the URL" },
        { "GET http://a/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n",    0,  "obsolete line folding in a header" },
        { "GET http://a/ HTTP/1.1\r\n\tfolded\r\n\r\n",           0,  "obsolete line folding in a header" },
        { "GET http://a/ HTTP/1.1\r\nNoColon\r\n\r\n",            0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\n: empty name\r\n\r\n",       0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\nBad Name: v\r\n\r\n",        0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\nBad(Name): v\r\n\r\n",       0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\nX: a\x01z\r\n\r\n",          0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\nX: a\x7fz\r\n\r\n",          0,  "malformed header line" },
        { "GET http://a/ HTTP/1.1\r\nX: a\rz\r\n\r\n",            0,  "malformed header line" },
};
/* clang-format on */

static void test_malformed_requests_are_refused_with_their_reason(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(malformed); i++) {
                size_t len = malformed[i].len ?: strlen(malformed[i].head);
                const char *reason = NULL;
                HttpRequest req = { .method = (char *) 0x1 };
                int r;

                r = http_head_parse_request((const uint8_t *) malformed[i].head, len, &req, &reason);
                if (r != -EBADMSG)
                        fail_msg("row %zu: %d, not -EBADMSG", i, r);
                if (!reason || strcmp(reason, malformed[i].reason) != 0)
                        fail_msg("row %zu: reason '%s', not '%s'", i, reason ?: "(none)",
                                 malformed[i].reason);
                assert_ptr_equal(req.method, (char *) 0x1); /* untouched on failure */
        }
}

static HttpRequest parse_ok(const char *head) {
        const char *reason = NULL;
        HttpRequest req;
        int r;

        r = http_head_parse_request((const uint8_t *) head, strlen(head), &req, &reason);
        if (r < 0)
                fail_msg("'%s': %d (%s)", head, r, reason ?: "");
        return req;
}

static void test_connect(void **state) {
        HttpRequest req = parse_ok("CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");

        assert_true(req.tunnel);
        assert_string_equal(req.method, "CONNECT");
        assert_string_equal(req.host, "Example.com");
        assert_int_equal(req.port, 443);
        assert_int_equal(req.minor, 1);
        assert_string_equal(req.headers, ""); /* Host is the relay's to set */
        http_head_request_done(&req);

        req = parse_ok("CONNECT [2001:db8::1]:8443 HTTP/1.0\n\n");
        assert_true(req.tunnel);
        assert_string_equal(req.host, "2001:db8::1"); /* without brackets */
        assert_int_equal(req.port, 8443);
        assert_int_equal(req.minor, 0);
        http_head_request_done(&req);

        req = parse_ok("CONNECT 192.0.2.1:80 HTTP/1.1\r\n\r\n");
        assert_string_equal(req.host, "192.0.2.1");
        http_head_request_done(&req);
}

static void test_plain_requests(void **state) {
        HttpRequest req =
                parse_ok("\r\n\r\nPOST http://user:pw@example.com:8080/p/a?q=1#frag HTTP/1.0\r\n"
                         "Content-Length: 3\r\nConnection: keep-alive\r\nProxy-Authorization: x\r\n"
                         "proxy-connection: close\r\nKeep-Alive: 5\r\nHOST: evil\r\nX-A:\tb c\r\n\r\n");

        assert_false(req.tunnel);
        assert_string_equal(req.method, "POST");
        assert_string_equal(req.host, "example.com");
        assert_int_equal(req.port, 8080);
        assert_int_equal(req.minor, 0);
        assert_string_equal(req.path, "/p/a?q=1"); /* no fragment on the wire, no user info */
        /* hop-by-hop and the relay's own headers dropped, whatever their case; the rest kept with CRLF */
        assert_string_equal(req.headers, "Content-Length: 3\r\nX-A:\tb c\r\n");
        http_head_request_done(&req);

        req = parse_ok("GET http://example.com HTTP/1.1\n\n");
        assert_int_equal(req.port, 80);
        assert_string_equal(req.path, "/");
        http_head_request_done(&req);

        req = parse_ok("GET HTTP://example.com?x=1 HTTP/1.1\r\n\r\n");
        assert_string_equal(req.path, "/?x=1");
        http_head_request_done(&req);

        req = parse_ok("GET http://[::1]:81/ HTTP/1.1\r\n\r\n");
        assert_string_equal(req.host, "::1");
        assert_int_equal(req.port, 81);
        http_head_request_done(&req);
}

static void test_head_end(void **state) {
        static const char crlf[] = "GET http://a/ HTTP/1.1\r\nX: y\r\n\r\nbody";
        static const char lf[] = "GET http://a/ HTTP/1.1\nX: y\n\nbody";

        assert_int_equal(http_head_end((const uint8_t *) crlf, strlen(crlf)), strlen(crlf) - 4);
        assert_int_equal(http_head_end((const uint8_t *) lf, strlen(lf)), strlen(lf) - 4);
        assert_int_equal(http_head_end((const uint8_t *) crlf, strlen(crlf) - 5), 0); /* still incomplete */
        assert_int_equal(http_head_end((const uint8_t *) "\n\r", 2), 0);
        assert_int_equal(http_head_end((const uint8_t *) "", 0), 0);
}

static void test_status_line(void **state) {
        char shown[HTTP_HEAD_STATUS_SHOWN + 1], long_line[400];
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        static const char denied[] = "HTTP/1.0 403 Forbidden\r\n\r\n";
        static const char odd[] = "HTTP/2 200 \x01\xff\r\n\r\n";

        assert_int_equal(http_head_parse_status((const uint8_t *) ok, strlen(ok), shown), 200);
        assert_string_equal(shown, "HTTP/1.1 200 Connection established");
        assert_int_equal(http_head_parse_status((const uint8_t *) denied, strlen(denied), shown), 403);
        assert_int_equal(http_head_parse_status((const uint8_t *) odd, strlen(odd), shown), 0);
        assert_string_equal(shown, "HTTP/2 200 ??"); /* only printable ASCII is quoted */
        assert_int_equal(http_head_parse_status((const uint8_t *) "HTTP/1.1 2x0 \r\n\r\n", 17, shown), 0);

        memset(long_line, 'A', sizeof(long_line));
        memcpy(long_line, "HTTP/1.1 502 ", 13);
        assert_int_equal(http_head_parse_status((const uint8_t *) long_line, sizeof(long_line), shown), 502);
        assert_int_equal(strlen(shown), HTTP_HEAD_STATUS_SHOWN);
}

static void test_authority(void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *host = NULL;
        uint16_t port = 0;

        assert_int_equal(http_head_parse_authority("example.com", 11, 80, &host, &port), 0);
        assert_string_equal(host, "example.com");
        assert_int_equal(port, 80);
        free(host);
        host = NULL;
        assert_int_equal(http_head_parse_authority("example.com:8080/ignored", 16, 0, &host, &port), 0);
        assert_string_equal(host, "example.com");
        assert_int_equal(port, 8080);
        assert_int_equal(http_head_parse_authority("example.com", 11, 0, &host, &port), -EBADMSG);
        assert_int_equal(http_head_parse_authority("", 0, 80, &host, &port), -EBADMSG);
        assert_int_equal(http_head_parse_authority("a\0b", 3, 80, &host, &port), -EBADMSG);
        assert_string_equal(host, "example.com"); /* untouched on failure */

        a = http_head_format_authority("::1", 443, true);
        b = http_head_format_authority("example.com", 80, false);
        c = http_head_format_authority("2001:db8::2", 80, false);
        assert_string_equal(a, "[::1]:443");
        assert_string_equal(b, "example.com");
        assert_string_equal(c, "[2001:db8::2]");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_malformed_requests_are_refused_with_their_reason),
                cmocka_unit_test(test_connect),
                cmocka_unit_test(test_plain_requests),
                cmocka_unit_test(test_head_end),
                cmocka_unit_test(test_status_line),
                cmocka_unit_test(test_authority),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
