/* egress-policy: see egress-policy.h. */

#include "egress-policy.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/parse.h"
#include "common/strv.h"

#define RULE_TEXT_MAX 300 /* "[" IPv6 "/128]:65535" or a 253-byte name with its port fit easily */
#define HOST_NAME_MAX_LEN 253
#define LABEL_MAX_LEN 63

typedef struct Address {
        int family; /* AF_INET or AF_INET6 */
        uint8_t bytes[16];
} Address;

/* An IPv4 address an IPv6 one stands for, as far as routing goes. */
typedef struct Embedded {
        const char *kind; /* "NAT64", "6to4", ... */
        Address ipv4;
} Embedded;

typedef struct BuiltinRange {
        const char *network;
        const char *label; /* "<label> address X is not reachable from runs" */
        const char *note;  /* NULL, or said in parentheses after the address */
} BuiltinRange;

/* The ranges no run reaches unless egress_allow names them. First match wins: a narrower row comes before
 * the one that holds it. The documentation ranges 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and
 * 2001:db8::/32 are deliberately absent: they stand for "the internet" in examples and tests. */
/* clang-format off */
static const BuiltinRange builtin_ranges[] = {
        /* network                label                       note */
        { "0.0.0.0/8",            "unspecified",              "'this network', RFC 1122" },
        { "10.0.0.0/8",           "private",                  "RFC 1918" },
        { "100.64.0.0/10",        "shared (CGNAT)",           "RFC 6598" },
        { "127.0.0.0/8",          "loopback",                 NULL },
        { "169.254.169.254/32",   "link-local",               "cloud metadata" },
        { "169.254.0.0/16",       "link-local",               NULL },
        { "172.16.0.0/12",        "private",                  "RFC 1918" },
        { "192.0.0.0/24",         "IETF protocol assignment", "RFC 6890" },
        { "192.168.0.0/16",       "private",                  "RFC 1918" },
        { "198.18.0.0/15",        "benchmarking",             "RFC 2544" },
        { "224.0.0.0/4",          "multicast",                NULL },
        { "255.255.255.255/32",   "broadcast",                NULL },
        { "240.0.0.0/4",          "reserved",                 "RFC 1112" },
        { "::/128",               "unspecified",              NULL },
        { "::1/128",              "loopback",                 NULL },
        { "::/96",                "IPv4-compatible",          "deprecated, RFC 4291" },
        { "64:ff9b:1::/48",       "local-use NAT64",          "RFC 8215" },
        { "100::/64",             "discard-only",             "RFC 6666" },
        { "fc00::/7",             "unique local (ULA)",       "RFC 4193" },
        { "fe80::/10",            "link-local",               NULL },
        { "fec0::/10",            "site-local",               "deprecated, RFC 3879" },
        { "ff00::/8",             "multicast",                NULL },
};
/* clang-format on */

typedef struct BuiltinNetwork {
        int family;
        uint8_t bytes[16];
        unsigned prefixlen;
} BuiltinNetwork;

struct EgressPolicy {
        EgressRule *allow, *deny;
        size_t n_allow, n_deny;
        bool port_allow_list; /* allow holds ":port" rules: other ports are denied */
        Address *local;       /* this host's own addresses */
        size_t n_local;
        BuiltinNetwork builtin[ELEMENTSOF(builtin_ranges)];
        char *reason; /* of the last denial */
};

static bool address_from_in6(const struct in6_addr *in6, Address *ret) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

        *ret = (Address){ .family = AF_INET6 };
        if (memcmp(in6->s6_addr, mapped, sizeof(mapped)) == 0) {
                /* ::ffff:a.b.c.d is a.b.c.d on the wire: check it as that. */
                ret->family = AF_INET;
                memcpy(ret->bytes, in6->s6_addr + 12, 4);
        } else
                memcpy(ret->bytes, in6->s6_addr, 16);
        return true;
}

static bool address_from_sockaddr(const struct sockaddr *sa, Address *ret) {
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                *ret = (Address){ .family = AF_INET };
                memcpy(ret->bytes, &in->sin_addr, 4);
                return true;
        }
        if (sa->sa_family == AF_INET6)
                return address_from_in6(&((const struct sockaddr_in6 *) sa)->sin6_addr, ret);
        return false;
}

/* An IP literal, IPv6 possibly in brackets. */
static bool address_from_string(const char *s, Address *ret) {
        struct in6_addr in6;
        struct in_addr in;
        size_t len = strlen(s);

        if (inet_pton(AF_INET, s, &in) == 1) {
                *ret = (Address){ .family = AF_INET };
                memcpy(ret->bytes, &in, 4);
                return true;
        }
        if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
                _cleanup_free_ char *inner = strndup(s + 1, len - 2);
                if (!inner || inet_pton(AF_INET6, inner, &in6) != 1)
                        return false;
                return address_from_in6(&in6, ret);
        }
        if (inet_pton(AF_INET6, s, &in6) == 1)
                return address_from_in6(&in6, ret);
        return false;
}

static void address_to_string(const Address *a, char buf[static INET6_ADDRSTRLEN]) {
        if (!inet_ntop(a->family, a->bytes, buf, INET6_ADDRSTRLEN))
                (void) snprintf(buf, INET6_ADDRSTRLEN, "?");
}

static bool prefix_matches(const uint8_t *network, unsigned prefixlen, const uint8_t *bytes) {
        unsigned whole = prefixlen / 8, rest = prefixlen % 8;

        if (memcmp(network, bytes, whole) != 0)
                return false;
        if (rest == 0)
                return true;
        return ((network[whole] ^ bytes[whole]) & (uint8_t) (0xff << (8 - rest))) == 0;
}

static Address ipv4_at(const uint8_t *p, bool inverted) {
        Address a = { .family = AF_INET };

        for (size_t i = 0; i < 4; i++)
                a.bytes[i] = inverted ? (uint8_t) ~p[i] : p[i];
        return a;
}

/* The IPv4 addresses an IPv6 address embeds: what a NAT64 gateway, a 6to4 relay or Teredo would reach. */
static size_t address_embedded_ipv4(const Address *a, Embedded ret[static 2]) {
        static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
        static const uint8_t translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
        static const uint8_t teredo[4] = { 0x20, 0x01, 0x00, 0x00 };

        if (a->family != AF_INET6)
                return 0;
        if (memcmp(a->bytes, nat64, sizeof(nat64)) == 0) {
                ret[0] = (Embedded){ "NAT64", ipv4_at(a->bytes + 12, false) };
                return 1;
        }
        if (memcmp(a->bytes, translated, sizeof(translated)) == 0) {
                ret[0] = (Embedded){ "IPv4-translated", ipv4_at(a->bytes + 12, false) };
                return 1;
        }
        if (a->bytes[0] == 0x20 && a->bytes[1] == 0x02) {
                ret[0] = (Embedded){ "6to4", ipv4_at(a->bytes + 2, false) };
                return 1;
        }
        if (memcmp(a->bytes, teredo, sizeof(teredo)) == 0) {
                ret[0] = (Embedded){ "Teredo", ipv4_at(a->bytes + 12, true) }; /* the client, obfuscated */
                ret[1] = (Embedded){ "Teredo", ipv4_at(a->bytes + 4, false) }; /* the server */
                return 2;
        }
        return 0;
}

/* "a.b.c.d[/n]" or an IPv6 "x::y[/n]". */
static int network_parse(const char *s, int *ret_family, uint8_t ret_bytes[static 16],
                         unsigned *ret_prefixlen, const char **reterr_reason) {
        _cleanup_free_ char *address = NULL;
        const char *slash = strchr(s, '/');
        uint8_t bytes[16] = { 0 }, masked[16];
        unsigned max, prefixlen;
        int family;

        address = slash ? strndup(s, (size_t) (slash - s)) : strdup(s);
        if (!address)
                return -ENOMEM;
        if (inet_pton(AF_INET, address, bytes) == 1)
                family = AF_INET;
        else if (inet_pton(AF_INET6, address, bytes) == 1)
                family = AF_INET6;
        else {
                *reterr_reason = "not a valid IPv4 or IPv6 address";
                return -EINVAL;
        }
        max = family == AF_INET ? 32 : 128;
        prefixlen = max;
        if (slash) {
                uint32_t n;

                if (parse_uint32(slash + 1, &n) < 0 || n > max) {
                        *reterr_reason = family == AF_INET
                                                 ? "the prefix length must be a number from 0 to 32"
                                                 : "the prefix length must be a number from 0 to 128";
                        return -EINVAL;
                }
                prefixlen = n;
        }

        memset(masked, 0, sizeof(masked));
        memcpy(masked, bytes, prefixlen / 8);
        if (prefixlen % 8)
                masked[prefixlen / 8] = bytes[prefixlen / 8] & (uint8_t) (0xff << (8 - prefixlen % 8));
        if (memcmp(masked, bytes, sizeof(bytes)) != 0) {
                *reterr_reason = "the address has bits set beyond the prefix length";
                return -EINVAL;
        }

        /* ::ffff:a.b.c.d/n is the IPv4 network, as addresses in that range are checked as IPv4. */
        if (family == AF_INET6 && prefixlen >= 96) {
                struct in6_addr in6;
                Address a;

                memcpy(in6.s6_addr, bytes, 16);
                (void) address_from_in6(&in6, &a);
                if (a.family == AF_INET) {
                        family = AF_INET;
                        memset(bytes, 0, sizeof(bytes));
                        memcpy(bytes, a.bytes, 4);
                        prefixlen -= 96;
                }
        }

        *ret_family = family;
        memcpy(ret_bytes, bytes, 16);
        *ret_prefixlen = prefixlen;
        return 0;
}

bool egress_host_name_is_valid(const char *host) {
        size_t len = strlen(host), label = 0;
        bool label_digits = true;

        if (len > 0 && host[len - 1] == '.')
                len--;
        if (len == 0 || len > HOST_NAME_MAX_LEN)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = host[i];

                if (c == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                        label_digits = true;
                        continue;
                }
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_'))
                        return false;
                if (++label > LABEL_MAX_LEN)
                        return false;
                if (c < '0' || c > '9')
                        label_digits = false;
        }
        /* No top-level domain is numeric: "10.1.2" is a mistyped address, not a name. */
        return label > 0 && !label_digits;
}

/* Lower case, without the trailing dot. */
static char *host_name_normalize(const char *host) {
        size_t len = strlen(host);
        char *s;

        if (len > 0 && host[len - 1] == '.')
                len--;
        s = strndup(host, len);
        if (!s)
                return NULL;
        for (char *c = s; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char) (*c - 'A' + 'a');
        return s;
}

static int port_parse(const char *s, uint16_t *ret, const char **reterr_reason) {
        uint32_t n;

        if (parse_uint32(s, &n) < 0 || n < 1 || n > 65535) {
                *reterr_reason = "the port must be a number from 1 to 65535";
                return -EINVAL;
        }
        *ret = (uint16_t) n;
        return 0;
}

void egress_rule_done(EgressRule *rule) {
        if (!rule)
                return;
        free(rule->text);
        free(rule->name);
        *rule = (EgressRule){ .kind = _EGRESS_RULE_KIND_INVALID };
}

static int refuse(const char **reterr_reason, const char *reason) {
        if (reterr_reason)
                *reterr_reason = reason;
        return -EINVAL;
}

/* Splits "host:port": ":port" alone (*ret_host NULL), "[v6]:port", a bare IPv6 (two colons or more, no
 * port), or "host:port" at the one colon. *ret_port_text is NULL without a port. */
static int rule_split(const char *text, char **ret_host, const char **ret_port_text,
                      const char **reterr_reason) {
        _cleanup_free_ char *host = NULL;
        const char *port_text = NULL, *colon;

        if (text[0] == ':' && !strchr(text + 1, ':'))
                port_text = text + 1;
        else if (text[0] == '[') {
                const char *close = strchr(text, ']');

                if (!close)
                        return refuse(reterr_reason, "'[' without ']'");
                if (close[1] != '\0' && close[1] != ':')
                        return refuse(reterr_reason, "only ':port' may follow ']'");
                host = strndup(text + 1, (size_t) (close - text - 1));
                if (!host)
                        return -ENOMEM;
                if (!strchr(host, ':'))
                        return refuse(reterr_reason, "only IPv6 addresses go in brackets");
                if (close[1] == ':')
                        port_text = close + 2;
        } else if ((colon = strchr(text, ':')) && !strchr(colon + 1, ':')) {
                host = strndup(text, (size_t) (colon - text));
                if (!host)
                        return -ENOMEM;
                port_text = colon + 1;
        } else {
                host = strdup(text);
                if (!host)
                        return -ENOMEM;
        }
        *ret_host = TAKE_PTR(host);
        *ret_port_text = port_text;
        return 0;
}

/* The host part of a rule (bracketed when text starts with '['): its kind, and its network or name. */
static int rule_host_parse(const char *text, const char *host, EgressRule *rule,
                           const char **reterr_reason) {
        _cleanup_free_ char *suffix = NULL;
        const char *reason = NULL;
        int r;

        if (host[0] == '\0')
                return refuse(reterr_reason, "no host before ':port' (write ':port' alone for every host)");
        if (text[0] == '[' || strchr(host, '/') || strchr(host, ':') ||
            strspn(host, "0123456789.") == strlen(host)) {
                rule->kind = EGRESS_RULE_NETWORK;
                r = network_parse(host, &rule->family, rule->address, &rule->prefixlen, &reason);
                if (r == -ENOMEM)
                        return r;
                return r < 0 ? refuse(reterr_reason, reason) : 0;
        }
        if (strncmp(host, "*.", 2) == 0) {
                if (!egress_host_name_is_valid(host + 2))
                        return refuse(reterr_reason, "not a valid host name after '*.'");
                rule->kind = EGRESS_RULE_DOMAIN;
                suffix = host_name_normalize(host + 2);
                if (!suffix || asprintf(&rule->name, ".%s", suffix) < 0)
                        return -ENOMEM;
                return 0;
        }
        if (strchr(host, '*'))
                return refuse(reterr_reason, "'*' is only allowed as the first label ('*.example.com')");
        if (!egress_host_name_is_valid(host))
                return refuse(reterr_reason, "not a valid host name, address or network");
        rule->kind = EGRESS_RULE_HOST;
        rule->name = host_name_normalize(host);
        return rule->name ? 0 : -ENOMEM;
}

int egress_rule_parse(const char *text, EgressRule *ret, const char **reterr_reason) {
        _cleanup_(egress_rule_done) EgressRule rule = { .kind = _EGRESS_RULE_KIND_INVALID };
        _cleanup_free_ char *host = NULL;
        const char *port_text = NULL, *reason = NULL;
        size_t len;
        int r;

        assert(text);
        assert(ret);

        len = strlen(text);
        if (len == 0)
                return refuse(reterr_reason, "empty rule");
        if (len > RULE_TEXT_MAX)
                return refuse(reterr_reason, "longer than 300 bytes");
        for (const char *c = text; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
                        return refuse(reterr_reason, "only printable ASCII without spaces is allowed");

        r = rule_split(text, &host, &port_text, reterr_reason);
        if (r < 0)
                return r;
        if (port_text) {
                r = port_parse(port_text, &rule.port, &reason);
                if (r < 0)
                        return refuse(reterr_reason, reason);
        }
        if (!host) /* ":port" */
                rule.kind = EGRESS_RULE_PORT;
        else {
                r = rule_host_parse(text, host, &rule, reterr_reason);
                if (r < 0)
                        return r;
        }

        rule.text = strdup(text);
        if (!rule.text)
                return -ENOMEM;
        *ret = rule;
        rule = (EgressRule){ .kind = _EGRESS_RULE_KIND_INVALID };
        return 0;
}

static int rules_parse(char *const *texts, EgressRule **ret, size_t *ret_n) {
        size_t n = strv_length(texts);
        EgressRule *rules;

        rules = calloc(n ? n : 1, sizeof(EgressRule));
        if (!rules)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *reason;
                int r = egress_rule_parse(texts[i], &rules[i], &reason);
                if (r < 0) {
                        for (size_t j = 0; j < i; j++)
                                egress_rule_done(&rules[j]);
                        free(rules);
                        return r;
                }
        }
        *ret = rules;
        *ret_n = n;
        return 0;
}

static void rules_free(EgressRule *rules, size_t n) {
        for (size_t i = 0; i < n; i++)
                egress_rule_done(&rules[i]);
        free(rules);
}

EgressPolicy *egress_policy_free(EgressPolicy *policy) {
        if (!policy)
                return NULL;
        rules_free(policy->allow, policy->n_allow);
        rules_free(policy->deny, policy->n_deny);
        free(policy->local);
        free(policy->reason);
        free(policy);
        return NULL;
}

DEFINE_POINTER_CLEANUP(EgressPolicy *, egress_policy_free);

int egress_policy_new(char *const *allow, char *const *deny, EgressPolicy **ret) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;
        int r;

        p = calloc(1, sizeof(EgressPolicy));
        if (!p)
                return -ENOMEM;

        for (size_t i = 0; i < ELEMENTSOF(builtin_ranges); i++) {
                const char *reason;

                r = network_parse(builtin_ranges[i].network, &p->builtin[i].family, p->builtin[i].bytes,
                                  &p->builtin[i].prefixlen, &reason);
                if (r < 0)
                        return r; /* a typo in the table above; test-egress-policy catches it */
        }

        r = rules_parse(allow, &p->allow, &p->n_allow);
        if (r < 0)
                return r;
        r = rules_parse(deny, &p->deny, &p->n_deny);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_allow; i++)
                if (p->allow[i].kind == EGRESS_RULE_PORT)
                        p->port_allow_list = true;

        *ret = TAKE_PTR(p);
        return 0;
}

int egress_policy_add_local_address(EgressPolicy *policy, const struct sockaddr *addr) {
        Address a, *l;

        assert(policy);
        assert(addr);

        if (!address_from_sockaddr(addr, &a))
                return -EAFNOSUPPORT;
        for (size_t i = 0; i < policy->n_local; i++)
                if (policy->local[i].family == a.family && memcmp(policy->local[i].bytes, a.bytes, 16) == 0)
                        return 0;
        l = reallocarray(policy->local, policy->n_local + 1, sizeof(Address));
        if (!l)
                return -ENOMEM;
        policy->local = l;
        policy->local[policy->n_local++] = a;
        return 0;
}

static void freeifaddrsp(struct ifaddrs **p) {
        if (*p)
                freeifaddrs(*p);
}

int egress_policy_add_host_addresses(EgressPolicy *policy) {
        _cleanup_(freeifaddrsp) struct ifaddrs *list = NULL;
        int r;

        if (getifaddrs(&list) < 0)
                return -errno;
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
                if (!i->ifa_addr ||
                    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                r = egress_policy_add_local_address(policy, i->ifa_addr);
                if (r < 0)
                        return r;
        }
        return 0;
}

int egress_policy_new_from_config(const Config *cfg, EgressPolicy **ret) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;
        int r;

        r = egress_policy_new(cfg->egress_allow, cfg->egress_deny, &p);
        if (r < 0)
                return r;
        r = egress_policy_add_host_addresses(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* Sets the reason of a denial; fallback (static) stands in when formatting runs out of memory. */
static int __attribute__((format(printf, 4, 5)))
deny(EgressPolicy *p, const char **reterr_reason, const char *fallback, const char *format, ...) {
        char *s = NULL;
        va_list ap;

        va_start(ap, format);
        if (vasprintf(&s, format, ap) < 0)
                s = NULL;
        va_end(ap);
        free(p->reason);
        p->reason = s;
        if (reterr_reason)
                *reterr_reason = s ?: fallback;
        return -EACCES;
}

typedef struct Destination {
        bool have_address;
        Address address;
        Embedded embedded[2];
        size_t n_embedded;
        const char *name; /* normalized, or NULL */
        uint16_t port;
} Destination;

static bool network_matches(int family, const uint8_t *bytes, unsigned prefixlen, const Destination *d,
                            const Address **ret_matched) {
        if (!d->have_address)
                return false;
        if (d->address.family == family && prefix_matches(bytes, prefixlen, d->address.bytes)) {
                *ret_matched = &d->address;
                return true;
        }
        for (size_t i = 0; i < d->n_embedded; i++)
                if (family == AF_INET && prefix_matches(bytes, prefixlen, d->embedded[i].ipv4.bytes)) {
                        *ret_matched = &d->embedded[i].ipv4;
                        return true;
                }
        return false;
}

static bool name_matches(const EgressRule *rule, const char *name) {
        size_t len, suffix;

        if (!name)
                return false;
        if (rule->kind == EGRESS_RULE_HOST)
                return streq(rule->name, name);
        len = strlen(name);
        suffix = strlen(rule->name);
        return len > suffix && streq(name + len - suffix, rule->name);
}

/* Whether the rule names the destination (host or network) and its port. */
static bool rule_matches(const EgressRule *rule, const Destination *d) {
        const Address *matched;

        if (rule->port != 0 && rule->port != d->port)
                return false;
        switch (rule->kind) {
        case EGRESS_RULE_PORT:
                return true;
        case EGRESS_RULE_NETWORK:
                return network_matches(rule->family, rule->address, rule->prefixlen, d, &matched);
        case EGRESS_RULE_HOST:
        case EGRESS_RULE_DOMAIN:
                return name_matches(rule, d->name);
        case _EGRESS_RULE_KIND_INVALID:
        case _EGRESS_RULE_KIND_MAX:
        default:
                assert(false);
                return false;
        }
}

static int deny_by_rule(EgressPolicy *p, const EgressRule *rule, const Destination *d, const char *host,
                        const char **reterr_reason) {
        char text[INET6_ADDRSTRLEN];

        switch (rule->kind) {
        case EGRESS_RULE_PORT:
                return deny(p, reterr_reason, "port is denied", "port %u is denied (egress_deny '%s')",
                            d->port, rule->text);
        case EGRESS_RULE_NETWORK:
                address_to_string(&d->address, text);
                return deny(p, reterr_reason, "address is on the deny list",
                            "address %s is on the deny list (egress_deny '%s')", text, rule->text);
        case EGRESS_RULE_DOMAIN:
        case EGRESS_RULE_HOST:
        case _EGRESS_RULE_KIND_INVALID:
        case _EGRESS_RULE_KIND_MAX:
        default:
                return deny(p, reterr_reason, "host is on the deny list",
                            "host '%s' is on the deny list (egress_deny '%s')", host, rule->text);
        }
}

#define DESCRIBED_MAX 128 /* "<label> address <IPv6> (<note>)": labels and notes of the table are short */

/* The built-in ranges and this host's own addresses, for one address. outer is the IPv6 address a was
 * embedded in (from says how), or NULL. */
static int check_builtin(EgressPolicy *p, const Address *a, const Embedded *from, const Address *outer,
                         const char **reterr_reason) {
        static const char unreachable[] = "address is not reachable from runs";
        static const char own[] = "one of this host's own addresses, which are not reachable from runs";
        char text[INET6_ADDRSTRLEN], outer_text[INET6_ADDRSTRLEN], described[DESCRIBED_MAX];

        address_to_string(a, text);
        if (outer)
                address_to_string(outer, outer_text);

        for (size_t i = 0; i < ELEMENTSOF(builtin_ranges); i++) {
                const BuiltinRange *row = &builtin_ranges[i];
                const BuiltinNetwork *n = &p->builtin[i];

                if (n->family != a->family || !prefix_matches(n->bytes, n->prefixlen, a->bytes))
                        continue;
                /* Cut, never overflowing, should a row ever outgrow DESCRIBED_MAX. */
                (void) snprintf(described, sizeof(described), "%s address %s%s%s%s", row->label, text,
                                row->note ? " (" : "", row->note ?: "", row->note ? ")" : "");
                if (outer)
                        return deny(p, reterr_reason, unreachable,
                                    "%s address %s maps to %s, which is not reachable from runs", from->kind,
                                    outer_text, described);
                return deny(p, reterr_reason, unreachable, "%s is not reachable from runs", described);
        }

        for (size_t i = 0; i < p->n_local; i++) {
                if (p->local[i].family != a->family || memcmp(p->local[i].bytes, a->bytes, 16) != 0)
                        continue;
                if (outer)
                        return deny(p, reterr_reason, own, "%s address %s maps to %s, %s", from->kind,
                                    outer_text, text, own);
                return deny(p, reterr_reason, own, "address %s is %s", text, own);
        }
        return 0;
}

static bool name_is_localhost(const char *name) {
        size_t len = strlen(name);

        /* RFC 6761 §6.3: these names are loopback wherever they are resolved, a chained proxy included. */
        return streq(name, "localhost") || (len > 10 && streq(name + len - 10, ".localhost"));
}

int egress_policy_check(EgressPolicy *policy, const struct sockaddr *addr, const char *host, uint16_t port,
                        const char **reterr_reason) {
        _cleanup_free_ char *name = NULL;
        Destination d = { .port = port };
        const char *shown = host ?: "";
        int r;

        assert(policy);

        if (addr) {
                if (!address_from_sockaddr(addr, &d.address))
                        return deny(policy, reterr_reason, "address family is not supported",
                                    "address family %i is not supported", addr->sa_family);
                d.have_address = true;
        }
        if (host && host[0] != '\0') {
                Address literal;

                /* Chained (no address): a literal is what the upstream proxy will connect to. */
                if (address_from_string(host, &literal)) {
                        if (!d.have_address) {
                                d.address = literal;
                                d.have_address = true;
                        }
                } else {
                        name = host_name_normalize(host);
                        if (!name)
                                return deny(policy, reterr_reason, "out of memory", "out of memory");
                        d.name = name;
                }
        }
        if (d.have_address)
                d.n_embedded = address_embedded_ipv4(&d.address, d.embedded);
        if (port == 0)
                return deny(policy, reterr_reason, "port 0 is not a valid destination",
                            "port 0 is not a valid destination");

        /* 1. egress_deny */
        for (size_t i = 0; i < policy->n_deny; i++)
                if (rule_matches(&policy->deny[i], &d))
                        return deny_by_rule(policy, &policy->deny[i], &d, shown, reterr_reason);

        /* 2. egress_allow naming the destination */
        for (size_t i = 0; i < policy->n_allow; i++)
                if (policy->allow[i].kind != EGRESS_RULE_PORT && rule_matches(&policy->allow[i], &d))
                        return 0;

        /* 3. built-in */
        if (d.name && name_is_localhost(d.name))
                return deny(policy, reterr_reason, "host names this host",
                            "host '%s' names this host (loopback), which is not reachable from runs", shown);
        if (d.have_address) {
                r = check_builtin(policy, &d.address, NULL, NULL, reterr_reason);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < d.n_embedded; i++) {
                        r = check_builtin(policy, &d.embedded[i].ipv4, &d.embedded[i], &d.address,
                                          reterr_reason);
                        if (r < 0)
                                return r;
                }
        }

        /* 4. the ports of egress_allow */
        if (policy->port_allow_list) {
                bool listed = false;

                for (size_t i = 0; i < policy->n_allow && !listed; i++)
                        listed = policy->allow[i].kind == EGRESS_RULE_PORT && policy->allow[i].port == port;
                if (!listed)
                        return deny(policy, reterr_reason, "port is not on the allow list",
                                    "port %u is not on the allow list (egress_allow)", port);
        }
        return 0;
}
