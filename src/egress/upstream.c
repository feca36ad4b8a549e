/* upstream: see upstream.h. */

#include "upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/strv.h"
#include "http-head.h"

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static int percent_decode(const char *s, size_t len, char **ret) {
        _cleanup_free_ char *d = malloc(len + 1);
        size_t k = 0;

        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != '%') {
                        d[k++] = s[i];
                        continue;
                }
                if (i + 2 >= len)
                        return -EINVAL;
                int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
                if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                        return -EINVAL;
                d[k++] = (char) (hi * 16 + lo);
                i += 2;
        }
        d[k] = '\0';
        *ret = TAKE_PTR(d);
        return 0;
}

static char *base64_encode(const char *s) {
        static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t len = strlen(s), k = 0;
        const unsigned char *p = (const unsigned char *) s;
        char *e = malloc((len + 2) / 3 * 4 + 1);

        if (!e)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t) p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                e[k++] = table[(v >> 18) & 63];
                e[k++] = table[(v >> 12) & 63];
                e[k++] = i + 1 < len ? table[(v >> 6) & 63] : '=';
                e[k++] = i + 2 < len ? table[v & 63] : '=';
        }
        e[k] = '\0';
        return e;
}

void upstream_done(Upstream *u) {
        free(u->host);
        free(u->authorization);
        *u = (Upstream){ 0 };
}

/* "user:password" (len bytes, percent-encoded) as the value of Proxy-Authorization. */
static int authorization_from_user_info(const char *s, size_t len, char **ret) {
        _cleanup_free_ char *user = NULL, *encoded = NULL;
        int r;

        r = percent_decode(s, len, &user);
        if (r < 0)
                return r;
        encoded = base64_encode(user);
        if (!encoded || asprintf(ret, "Basic %s", encoded) < 0)
                return -ENOMEM;
        return 0;
}

int upstream_parse(const char *url, Upstream *ret) {
        _cleanup_free_ char *host = NULL, *authorization = NULL;
        const char *rest, *end, *at;
        Route route;
        uint16_t default_port, port;
        size_t len;
        int r;

        if (!url || url[0] == '\0') {
                *ret = (Upstream){ 0 };
                return 0;
        }
        if (strncasecmp(url, "http://", 7) == 0) {
                route = ROUTE_HTTP_PROXY;
                default_port = 80;
                rest = url + 7;
        } else if (strncasecmp(url, "socks5://", 9) == 0 || strncasecmp(url, "socks5h://", 10) == 0) {
                route = ROUTE_SOCKS5;
                default_port = 1080;
                rest = strchr(url, '/') + 2;
        } else
                return -EPROTONOSUPPORT;

        len = strcspn(rest, "/?#");
        end = rest + len;
        if (*end != '\0' && !streq(end, "/"))
                return -EINVAL;
        at = memrchr(rest, '@', len);
        if (at) {
                if (route != ROUTE_HTTP_PROXY)
                        return -EPROTONOSUPPORT; /* SOCKS5 without authentication only */
                r = authorization_from_user_info(rest, (size_t) (at - rest), &authorization);
                if (r < 0)
                        return r;
                len -= (size_t) (at + 1 - rest);
                rest = at + 1;
        }
        r = http_head_parse_authority(rest, len, default_port, &host, &port);
        if (r == -EBADMSG)
                return -EINVAL;
        if (r < 0)
                return r;

        *ret = (Upstream){ .route = route,
                           .host = TAKE_PTR(host),
                           .port = port,
                           .authorization = TAKE_PTR(authorization) };
        return 0;
}

const char *upstream_name(const Upstream *u) {
        return u->route == ROUTE_SOCKS5 ? "SOCKS5 proxy" : "HTTP proxy";
}

int upstream_no_proxy_parse(const char *text, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0, k = 0;

        for (const char *p = text ?: ""; *p; p++)
                n += *p == ',' || *p == ' ';
        l = calloc(n + 2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (const char *p = text ?: ""; *p;) {
                size_t len = strcspn(p, ", ");
                const char *item = p;

                p += len;
                if (*p)
                        p++;
                while (len > 0 && *item == '.') {
                        item++;
                        len--;
                }
                if (len == 0)
                        continue;
                l[k] = strndup(item, len);
                if (!l[k])
                        return -ENOMEM;
                for (char *c = l[k]; *c; c++)
                        if (*c >= 'A' && *c <= 'Z')
                                *c = (char) (*c - 'A' + 'a');
                k++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

bool upstream_no_proxy_matches(char *const *l, const char *host) {
        size_t len = strlen(host);

        for (; l && *l; l++) {
                size_t n = strlen(*l);
                if (streq(*l, "*"))
                        return true;
                if (len == n && strncasecmp(host, *l, n) == 0)
                        return true;
                if (len > n && host[len - n - 1] == '.' && strncasecmp(host + len - n, *l, n) == 0)
                        return true;
        }
        return false;
}

int upstream_load(const Config *cfg, Upstreams *ret) {
        int r;

        *ret = (Upstreams){ 0 };
        r = upstream_parse(cfg->proxy_http, &ret->http);
        if (r < 0)
                return r;
        r = upstream_parse(cfg->proxy_https, &ret->https);
        if (r < 0)
                return r;
        r = upstream_parse(cfg->proxy_socks5, &ret->socks5);
        if (r < 0)
                return r;
        return upstream_no_proxy_parse(cfg->proxy_no_proxy, &ret->no_proxy);
}

void upstream_unload(Upstreams *u) {
        upstream_done(&u->http);
        upstream_done(&u->https);
        upstream_done(&u->socks5);
        u->no_proxy = strv_free(u->no_proxy);
}

const Upstream *upstream_pick(const Upstreams *u, const char *host, bool tunnel) {
        if (upstream_no_proxy_matches(u->no_proxy, host))
                return NULL;
        if (tunnel && u->https.route != ROUTE_DIRECT)
                return &u->https;
        if (!tunnel && u->http.route != ROUTE_DIRECT)
                return &u->http;
        if (u->socks5.route != ROUTE_DIRECT)
                return &u->socks5;
        return NULL;
}
