#pragma once
/* upstream: the proxies the egress relay chains to (proxy.http, proxy.https, proxy.socks5 and
 * proxy.no_proxy in difysandbox.conf(5)), parsed from the configuration, and the choice of the next hop for
 * a destination. No I/O, never logs. Only src/egress uses it; config-file.c checks the URLs through
 * egress_proxy_url_check() (egress.h). */

#include <stdbool.h>
#include <stdint.h>

typedef struct Config Config;

typedef enum Route {
        ROUTE_DIRECT,     /* the relay connects itself */
        ROUTE_HTTP_PROXY, /* through an upstream HTTP proxy: CONNECT, or an absolute-form request */
        ROUTE_SOCKS5,     /* through an upstream SOCKS5 proxy, with the name (ATYP 3) */
} Route;

typedef struct Upstream {
        Route route; /* ROUTE_DIRECT: not configured */
        char *host;
        uint16_t port;
        char *authorization; /* "Basic ..." from the user info of an http:// proxy, or NULL */
} Upstream;

typedef struct Upstreams {
        Upstream http, https, socks5;
        char **no_proxy; /* lower-case names and suffixes; "*" is everything */
} Upstreams;

/* One proxy URL: "http://[user:password@]host[:port][/]", "socks5://host[:port]" or
 * "socks5h://host[:port]"; NULL or empty is ROUTE_DIRECT. Returns 0, -EPROTONOSUPPORT for another scheme or
 * a socks5 proxy with a user, -EINVAL when it does not parse, -ENOMEM. *ret is set only on success. */
int upstream_parse(const char *url, Upstream *ret);
void upstream_done(Upstream *u);

/* "HTTP proxy" or "SOCKS5 proxy", for messages. */
const char *upstream_name(const Upstream *u);

/* proxy.no_proxy: comma- or space-separated names; "example.com" and ".example.com" both mean the name
 * and every name below it, as curl reads NO_PROXY; "*" means every destination. 0 or -ENOMEM. */
int upstream_no_proxy_parse(const char *text, char ***ret);
bool upstream_no_proxy_matches(char *const *l, const char *host);

/* All of the configuration's proxies, or the first error of upstream_parse(). *ret is zeroed first and
 * must be freed with upstream_unload() whatever the result. */
int upstream_load(const Config *cfg, Upstreams *ret);
void upstream_unload(Upstreams *u);

/* The next hop for host: NULL to connect directly (no proxy configured for it, or no_proxy names it), else
 * proxy.https for a tunnel or proxy.http for a plain request, falling back to proxy.socks5. */
const Upstream *upstream_pick(const Upstreams *u, const char *host, bool tunnel);
