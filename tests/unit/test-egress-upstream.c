/* Unit tests of src/egress/upstream.c: the proxy URLs of the configuration, proxy.no_proxy, and the choice
 * of the next hop. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/strv.h"
#include "egress/egress.h"
#include "egress/upstream.h"

static void test_parse(void **state) {
        Upstream u = { 0 };

        assert_int_equal(upstream_parse("", &u), 0);
        assert_int_equal(u.route, ROUTE_DIRECT);
        assert_int_equal(upstream_parse(NULL, &u), 0);
        assert_int_equal(u.route, ROUTE_DIRECT);

        assert_int_equal(upstream_parse("HTTP://proxy.example:3128/", &u), 0);
        assert_int_equal(u.route, ROUTE_HTTP_PROXY);
        assert_string_equal(u.host, "proxy.example");
        assert_int_equal(u.port, 3128);
        assert_null(u.authorization);
        assert_string_equal(upstream_name(&u), "HTTP proxy");
        upstream_done(&u);

        /* user info, percent-decoded, becomes Basic authorization: "us er:p@ss" */
        assert_int_equal(upstream_parse("http://us%20er:p%40ss@10.0.0.1", &u), 0);
        assert_int_equal(u.port, 80);
        assert_string_equal(u.authorization, "Basic dXMgZXI6cEBzcw==");
        upstream_done(&u);

        assert_int_equal(upstream_parse("socks5h://[::1]", &u), 0);
        assert_int_equal(u.route, ROUTE_SOCKS5);
        assert_string_equal(u.host, "::1");
        assert_int_equal(u.port, 1080);
        assert_string_equal(upstream_name(&u), "SOCKS5 proxy");
        upstream_done(&u);
        assert_int_equal(upstream_parse("socks5://socks.example:9050", &u), 0);
        upstream_done(&u);
}

static void test_refused(void **state) {
        static const struct {
                const char *url;
                int r;
        } rows[] = {
                { "https://proxy.example", -EPROTONOSUPPORT },
                { "ftp://proxy.example", -EPROTONOSUPPORT },
                { "proxy.example:3128", -EPROTONOSUPPORT },
                { "socks5://user@proxy.example", -EPROTONOSUPPORT }, /* no SOCKS5 authentication */
                { "http://proxy.example/path", -EINVAL },
                { "http://proxy.example?x", -EINVAL },
                { "http://", -EINVAL },
                { "http://proxy.example:0", -EINVAL },
                { "http://proxy.example:70000", -EINVAL },
                { "http://::1:80", -EINVAL },
                { "http://bad%zzuser@proxy.example", -EINVAL },
                { "http://nul%00@proxy.example", -EINVAL },
                { "http://under_score!:80", -EINVAL },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                Upstream u = { .host = (char *) 0x1 };
                int r = upstream_parse(rows[i].url, &u);

                if (r != rows[i].r)
                        fail_msg("'%s': %d, not %d", rows[i].url, r, rows[i].r);
                assert_ptr_equal(u.host, (char *) 0x1);
                assert_int_equal(egress_proxy_url_check(rows[i].url), rows[i].r);
        }
        assert_int_equal(egress_proxy_url_check("http://proxy.example:3128"), 0);
        assert_int_equal(egress_proxy_url_check(""), 0);
}

static void test_no_proxy(void **state) {
        _cleanup_strv_free_ char **l = NULL, **none = NULL, **all = NULL;

        assert_int_equal(upstream_no_proxy_parse("Example.COM, .internal.test  10.0.0.1,,", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "example.com");
        assert_string_equal(l[1], "internal.test"); /* the leading dot means the same */
        assert_true(upstream_no_proxy_matches(l, "example.com"));
        assert_true(upstream_no_proxy_matches(l, "API.example.com"));
        assert_false(upstream_no_proxy_matches(l, "notexample.com"));
        assert_false(upstream_no_proxy_matches(l, "example.com.evil"));
        assert_true(upstream_no_proxy_matches(l, "a.b.internal.test"));
        assert_true(upstream_no_proxy_matches(l, "10.0.0.1"));
        assert_false(upstream_no_proxy_matches(l, "10.0.0.10"));

        assert_int_equal(upstream_no_proxy_parse(NULL, &none), 0);
        assert_int_equal(strv_length(none), 0);
        assert_false(upstream_no_proxy_matches(none, "example.com"));
        assert_int_equal(upstream_no_proxy_parse("*", &all), 0);
        assert_true(upstream_no_proxy_matches(all, "anything.example"));
}

static void set(char **field, const char *value) {
        free(*field);
        *field = strdup(value);
        assert_non_null(*field);
}

static void test_pick(void **state) {
        Config cfg;
        Upstreams u;

        assert_int_equal(config_init_defaults(&cfg), 0);
        assert_int_equal(upstream_load(&cfg, &u), 0);
        assert_null(upstream_pick(&u, "example.com", true)); /* nothing configured: direct */
        upstream_unload(&u);

        set(&cfg.proxy_http, "http://h.example:3128");
        set(&cfg.proxy_https, "http://s.example:3129");
        set(&cfg.proxy_socks5, "socks5://k.example");
        set(&cfg.proxy_no_proxy, "local.test");
        assert_int_equal(upstream_load(&cfg, &u), 0);
        assert_string_equal(upstream_pick(&u, "example.com", true)->host, "s.example");
        assert_string_equal(upstream_pick(&u, "example.com", false)->host, "h.example");
        assert_null(upstream_pick(&u, "x.local.test", true));
        upstream_done(&u.https);
        assert_string_equal(upstream_pick(&u, "example.com", true)->host,
                            "k.example"); /* SOCKS5 for the rest */
        upstream_unload(&u);

        set(&cfg.proxy_socks5, "gopher://k.example");
        assert_int_equal(upstream_load(&cfg, &u), -EPROTONOSUPPORT);
        upstream_unload(&u);
        config_done(&cfg);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_no_proxy),
                cmocka_unit_test(test_pick),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
