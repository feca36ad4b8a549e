/* test-egress-policy: src/egress/egress-policy.c. Every built-in range is denied at both of its edges and
 * not one address beyond them; the documentation ranges stay reachable; IPv4-mapped, NAT64, 6to4, Teredo
 * and IPv4-translated addresses are checked as the IPv4 address they stand for; this host's own addresses
 * are denied; egress_deny beats egress_allow, which beats the built-in ranges; ports and host wildcards
 * match as documented; a chained check (no address) still applies the rules of names, ports and IP
 * literals; and every malformed rule is refused with its reason. */

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "egress/egress-policy.h"

/* addr as a sockaddr (IPv4 or IPv6 text). */
static socklen_t sockaddr_from(const char *addr, struct sockaddr_storage *ss) {
        struct sockaddr_in *in = (struct sockaddr_in *) ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

        memset(ss, 0, sizeof(*ss));
        if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                return sizeof(*in);
        }
        assert_int_equal(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1);
        in6->sin6_family = AF_INET6;
        return sizeof(*in6);
}

/* The check of connecting to addr (NULL: chained, no address) asked for by host on port; the reason is
 * copied out (NULL when allowed). */
static int check(EgressPolicy *p, const char *addr, const char *host, uint16_t port, char **ret_reason) {
        struct sockaddr_storage ss;
        const char *reason = NULL;
        int r;

        if (addr)
                (void) sockaddr_from(addr, &ss);
        r = egress_policy_check(p, addr ? (struct sockaddr *) &ss : NULL, host, port, &reason);
        if (r < 0) {
                assert_int_equal(r, -EACCES);
                assert_non_null(reason);
                assert_true(strlen(reason) > 0);
        }
        if (ret_reason)
                *ret_reason = r < 0 ? strdup(reason) : NULL;
        return r;
}

static void assert_denied(EgressPolicy *p, const char *addr, const char *host, uint16_t port,
                          const char *expected) {
        char *reason = NULL;

        if (check(p, addr, host, port, &reason) != -EACCES)
                fail_msg("%s (host %s, port %u) was allowed, expected: %s", addr ?: "(no address)",
                         host ?: "-", port, expected);
        if (expected && !strstr(reason, expected))
                fail_msg("%s: reason '%s' does not hold '%s'", addr ?: host, reason, expected);
        free(reason);
}

static void assert_allowed(EgressPolicy *p, const char *addr, const char *host, uint16_t port) {
        char *reason = NULL;

        if (check(p, addr, host, port, &reason) != 0)
                fail_msg("%s (host %s, port %u) was denied: %s", addr ?: "(no address)", host ?: "-", port,
                         reason);
}

static EgressPolicy *policy(const char *const *allow, const char *const *deny) {
        EgressPolicy *p = NULL;

        assert_int_equal(egress_policy_new((char *const *) allow, (char *const *) deny, &p), 0);
        assert_non_null(p);
        return p;
}

/* Every built-in range, at both edges, and the addresses just beyond them. */
static void test_builtin_ranges_edges(void **state) {
        /* clang-format off */
        static const struct {
                const char *addr;
                const char *reason; /* NULL: allowed */
        } cases[] = {
                { "0.0.0.0",          "unspecified address 0.0.0.0 ('this network', RFC 1122) "
                                      "is not reachable from runs" },
                { "0.255.255.255",    "unspecified address" },
                { "1.0.0.0",          NULL },
                { "9.255.255.255",    NULL },
                { "10.0.0.0",         "private address 10.0.0.0 (RFC 1918) is not reachable from runs" },
                { "10.255.255.255",   "private address 10.255.255.255 (RFC 1918)" },
                { "11.0.0.0",         NULL },
                { "100.63.255.255",   NULL },
                { "100.64.0.0",       "shared (CGNAT) address 100.64.0.0 (RFC 6598)" },
                { "100.127.255.255",  "shared (CGNAT) address 100.127.255.255" },
                { "100.128.0.0",      NULL },
                { "126.255.255.255",  NULL },
                { "127.0.0.0",        "loopback address 127.0.0.0 is not reachable from runs" },
                { "127.0.0.1",        "loopback address 127.0.0.1 is not reachable from runs" },
                { "127.255.255.255",  "loopback address 127.255.255.255" },
                { "128.0.0.0",        NULL },
                { "169.253.255.255",  NULL },
                { "169.254.0.0",      "link-local address 169.254.0.0 is not reachable from runs" },
                { "169.254.169.254",  "link-local address 169.254.169.254 (cloud metadata) "
                                      "is not reachable from runs" },
                { "169.254.255.255",  "link-local address 169.254.255.255" },
                { "169.255.0.0",      NULL },
                { "172.15.255.255",   NULL },
                { "172.16.0.0",       "private address 172.16.0.0 (RFC 1918)" },
                { "172.31.255.255",   "private address 172.31.255.255 (RFC 1918)" },
                { "172.32.0.0",       NULL },
                { "191.255.255.255",  NULL },
                { "192.0.0.0",        "IETF protocol assignment address 192.0.0.0 (RFC 6890)" },
                { "192.0.0.255",      "IETF protocol assignment address 192.0.0.255" },
                { "192.0.1.0",        NULL },
                { "192.0.2.0",        NULL }, /* TEST-NET-1: "the internet" of tests and examples */
                { "192.0.2.255",      NULL },
                { "192.167.255.255",  NULL },
                { "192.168.0.0",      "private address 192.168.0.0 (RFC 1918)" },
                { "192.168.255.255",  "private address 192.168.255.255 (RFC 1918)" },
                { "192.169.0.0",      NULL },
                { "198.17.255.255",   NULL },
                { "198.18.0.0",       "benchmarking address 198.18.0.0 (RFC 2544)" },
                { "198.19.255.255",   "benchmarking address 198.19.255.255" },
                { "198.20.0.0",       NULL },
                { "198.51.100.0",     NULL }, /* TEST-NET-2 */
                { "198.51.100.255",   NULL },
                { "203.0.113.0",      NULL }, /* TEST-NET-3 */
                { "203.0.113.255",    NULL },
                { "223.255.255.255",  NULL },
                { "224.0.0.0",        "multicast address 224.0.0.0 is not reachable from runs" },
                { "239.255.255.255",  "multicast address 239.255.255.255" },
                { "240.0.0.0",        "reserved address 240.0.0.0 (RFC 1112)" },
                { "255.255.255.254",  "reserved address 255.255.255.254" },
                { "255.255.255.255",  "broadcast address 255.255.255.255 is not reachable from runs" },
                { "::",               "unspecified address :: is not reachable from runs" },
                { "::1",              "loopback address ::1 is not reachable from runs" },
                { "::2",              "IPv4-compatible address ::2 (deprecated, RFC 4291)" },
                { "::ffff:ffff",      "IPv4-compatible address" },
                { "::1:0:0",          NULL },
                { "64:ff9b:1::",      "local-use NAT64 address 64:ff9b:1:: (RFC 8215)" },
                { "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "local-use NAT64" },
                { "64:ff9b:2::",      NULL },
                { "100::",            "discard-only address 100:: (RFC 6666)" },
                { "100::ffff:ffff:ffff:ffff", "discard-only" },
                { "100:0:0:1::",      NULL },
                { "2001:db8::1",      NULL }, /* documentation */
                { "2606:4700:4700::1111", NULL },
                { "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
                { "fc00::",           "unique local (ULA) address fc00:: (RFC 4193)" },
                { "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local (ULA)" },
                { "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
                { "fe80::",           "link-local address fe80:: is not reachable from runs" },
                { "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local address" },
                { "fec0::",           "site-local address fec0:: (deprecated, RFC 3879)" },
                { "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local" },
                { "ff00::",           "multicast address ff00:: is not reachable from runs" },
                { "ff02::1",          "multicast address ff02::1" },
                { "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast" },
        };
        /* clang-format on */
        EgressPolicy *p = policy(NULL, NULL);

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (cases[i].reason)
                        assert_denied(p, cases[i].addr, cases[i].addr, 443, cases[i].reason);
                else
                        assert_allowed(p, cases[i].addr, cases[i].addr, 443);
        }
        egress_policy_free(p);
}

/* IPv6 forms of an IPv4 address are checked as that address. */
static void test_embedded_ipv4(void **state) {
        /* clang-format off */
        static const struct {
                const char *addr;
                const char *reason;
        } cases[] = {
                /* IPv4-mapped: that IPv4 address itself, on the wire */
                { "::ffff:127.0.0.1",        "loopback address 127.0.0.1 is not reachable from runs" },
                { "::ffff:169.254.169.254",  "link-local address 169.254.169.254 (cloud metadata)" },
                { "::ffff:10.1.2.3",         "private address 10.1.2.3 (RFC 1918)" },
                { "::ffff:0.0.0.0",          "unspecified address 0.0.0.0" },
                { "::ffff:8.8.8.8",          NULL },
                { "::ffff:198.51.100.2",     NULL },
                /* NAT64, well-known prefix */
                { "64:ff9b::7f00:1",         "NAT64 address 64:ff9b::7f00:1 maps to loopback address "
                                             "127.0.0.1, which is not reachable from runs" },
                { "64:ff9b::a9fe:a9fe",      "maps to link-local address 169.254.169.254 (cloud metadata)" },
                { "64:ff9b::c0a8:101",       "maps to private address 192.168.1.1 (RFC 1918)" },
                { "64:ff9b::808:808",        NULL },
                /* 6to4 */
                { "2002:7f00:1::1",          "6to4 address 2002:7f00:1::1 maps to loopback address "
                                             "127.0.0.1" },
                { "2002:a00:1::",            "maps to private address 10.0.0.1 (RFC 1918)" },
                { "2002:a9fe:a9fe::1",       "cloud metadata" },
                { "2002:808:808::1",         NULL },
                /* Teredo: the server in bits 32-63, the client inverted in the last 32 */
                { "2001:0:808:808::80ff:fffe",
                                             "Teredo address 2001:0:808:808::80ff:fffe maps to loopback "
                                             "address 127.0.0.1" },
                { "2001:0:7f00:1::f7f7:f7f7",
                                             "Teredo address 2001:0:7f00:1::f7f7:f7f7 maps to loopback "
                                             "address 127.0.0.1" },
                { "2001:0:808:808::f7f7:f7f7", NULL }, /* server 8.8.8.8, client 8.8.8.8 */
                /* IPv4-translated (RFC 2765) */
                { "::ffff:0:7f00:1",         "IPv4-translated address ::ffff:0:7f00:1 maps to loopback "
                                             "address 127.0.0.1" },
                { "::ffff:0:808:808",        NULL },
        };
        /* clang-format on */
        EgressPolicy *p = policy(NULL, NULL);

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (cases[i].reason)
                        assert_denied(p, cases[i].addr, NULL, 80, cases[i].reason);
                else
                        assert_allowed(p, cases[i].addr, NULL, 80);
        }
        egress_policy_free(p);
}

static void test_local_addresses(void **state) {
        EgressPolicy *p = policy(NULL, NULL);
        struct sockaddr_storage ss;

        (void) sockaddr_from("198.51.100.7", &ss);
        assert_int_equal(egress_policy_add_local_address(p, (struct sockaddr *) &ss), 0);
        (void) sockaddr_from("2001:db8::7", &ss);
        assert_int_equal(egress_policy_add_local_address(p, (struct sockaddr *) &ss), 0);

        assert_denied(p, "198.51.100.7", "198.51.100.7", 80,
                      "address 198.51.100.7 is one of this host's own addresses, which are not reachable "
                      "from runs");
        assert_denied(p, "::ffff:198.51.100.7", NULL, 80,
                      "address 198.51.100.7 is one of this host's own addresses");
        assert_denied(
                p, "64:ff9b::c633:6407", NULL, 80,
                "NAT64 address 64:ff9b::c633:6407 maps to 198.51.100.7, one of this host's own addresses");
        assert_denied(p, "2001:db8::7", "2001:db8::7", 80,
                      "address 2001:db8::7 is one of this host's own addresses");
        assert_allowed(p, "198.51.100.8", NULL, 80);
        assert_allowed(p, "2001:db8::8", NULL, 80);
        /* A name that resolves to it is no way around it. */
        assert_denied(p, "198.51.100.7", "www.example.com", 443, "one of this host's own addresses");

        /* An explicit allow of the network opens it, as it opens the private ranges. */
        egress_policy_free(p);
        p = policy((const char *const[]){ "198.51.100.7", NULL }, NULL);
        (void) sockaddr_from("198.51.100.7", &ss);
        assert_int_equal(egress_policy_add_local_address(p, (struct sockaddr *) &ss), 0);
        assert_allowed(p, "198.51.100.7", NULL, 80);
        egress_policy_free(p);
}

/* The addresses of this machine's interfaces, as getifaddrs() lists them, are all denied. */
static void test_host_addresses(void **state) {
        struct ifaddrs *list = NULL;
        EgressPolicy *p = policy(NULL, NULL);
        unsigned checked = 0;

        assert_int_equal(egress_policy_add_host_addresses(p), 0);
        assert_int_equal(getifaddrs(&list), 0);
        for (struct ifaddrs *i = list; i; i = i->ifa_next) {
                char text[INET6_ADDRSTRLEN];
                const void *a;
                const char *reason;

                if (!i->ifa_addr ||
                    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                a = i->ifa_addr->sa_family == AF_INET
                            ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                            : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                assert_non_null(inet_ntop(i->ifa_addr->sa_family, a, text, sizeof(text)));
                if (egress_policy_check(p, i->ifa_addr, NULL, 80, &reason) != -EACCES)
                        fail_msg("this host's address %s (%s) is reachable", text, i->ifa_name);
                checked++;
        }
        freeifaddrs(list);
        assert_true(checked > 0); /* lo at least */
        egress_policy_free(p);
}

static void test_precedence(void **state) {
        EgressPolicy *p;

        /* An allowed CIDR opens part of a private range, and only that part. */
        p = policy((const char *const[]){ "10.1.2.0/24", NULL }, NULL);
        assert_allowed(p, "10.1.2.3", "api.internal", 443);
        assert_allowed(p, "::ffff:10.1.2.3", NULL, 443);  /* mapped: the same address */
        assert_allowed(p, "64:ff9b::a01:203", NULL, 443); /* NAT64 of it */
        assert_denied(p, "10.1.3.1", "api.internal", 443, "private address 10.1.3.1 (RFC 1918)");
        egress_policy_free(p);

        /* egress_deny wins over egress_allow. */
        p = policy((const char *const[]){ "10.1.2.0/24", "api.example.com", NULL },
                   (const char *const[]){ "10.1.2.3", "api.example.com:8080", NULL });
        assert_denied(p, "10.1.2.3", NULL, 443,
                      "address 10.1.2.3 is on the deny list (egress_deny '10.1.2.3')");
        assert_allowed(p, "10.1.2.4", NULL, 443);
        assert_allowed(p, "198.51.100.2", "api.example.com", 443);
        assert_denied(p, "198.51.100.2", "api.example.com", 8080,
                      "host 'api.example.com' is on the deny list (egress_deny 'api.example.com:8080')");
        egress_policy_free(p);

        /* An allowed name opens whatever it resolves to (the operator's choice), other names do not. */
        p = policy((const char *const[]){ "api.internal", "localhost", NULL }, NULL);
        assert_allowed(p, "10.0.0.5", "api.internal", 80);
        assert_allowed(p, "10.0.0.5", "API.Internal.", 80);
        assert_denied(p, "10.0.0.5", "other.internal", 80, "private address 10.0.0.5");
        assert_denied(p, "10.0.0.5", NULL, 80, "private address 10.0.0.5");
        assert_allowed(p, "127.0.0.1", "localhost", 80);
        egress_policy_free(p);

        /* The cloud metadata address only when named explicitly. */
        p = policy((const char *const[]){ "169.254.169.254/32:80", NULL }, NULL);
        assert_allowed(p, "169.254.169.254", NULL, 80);
        assert_denied(p, "169.254.169.254", NULL, 443, "cloud metadata");
        assert_denied(p, "169.254.169.253", NULL, 80, "link-local address 169.254.169.253");
        egress_policy_free(p);

        /* Denied public networks and names. */
        p = policy(NULL, (const char *const[]){ "203.0.113.0/24", "evil.example.com", "8.8.8.0/24", NULL });
        assert_denied(p, "203.0.113.9", "www.example.com", 443,
                      "address 203.0.113.9 is on the deny list (egress_deny '203.0.113.0/24')");
        assert_denied(p, "198.51.100.2", "evil.example.com", 443,
                      "host 'evil.example.com' is on the deny list (egress_deny 'evil.example.com')");
        assert_denied(p, "64:ff9b::808:808", NULL, 443, "on the deny list (egress_deny '8.8.8.0/24')");
        assert_allowed(p, "198.51.100.2", "good.example.com", 443);
        egress_policy_free(p);
}

static void test_ports(void **state) {
        EgressPolicy *p;

        p = policy((const char *const[]){ "198.51.100.2:25", NULL }, (const char *const[]){ ":25", NULL });
        assert_denied(p, "198.51.100.2", "mail.example.com", 25, "port 25 is denied (egress_deny ':25')");
        assert_allowed(p, "198.51.100.2", "mail.example.com", 587);
        assert_denied(p, "198.51.100.2", "mail.example.com", 0, "port 0 is not a valid destination");
        egress_policy_free(p);

        /* ":port" items of egress_allow make a list of the ports runs may use. */
        p = policy((const char *const[]){ ":443", ":80", "10.1.2.3:8443", "api.example.com", NULL }, NULL);
        assert_allowed(p, "198.51.100.2", "www.example.com", 443);
        assert_allowed(p, "198.51.100.2", "www.example.com", 80);
        assert_denied(p, "198.51.100.2", "www.example.com", 8080,
                      "port 8080 is not on the allow list (egress_allow)");
        assert_allowed(p, "10.1.2.3", NULL, 8443);                           /* named with its port */
        assert_denied(p, "10.1.2.3", NULL, 443, "private address 10.1.2.3"); /* a port item opens no range */
        assert_denied(p, "127.0.0.1", "localhost", 443, "loopback");
        assert_allowed(p, "198.51.100.2", "api.example.com", 8080); /* named: every port */
        egress_policy_free(p);

        /* IPv6 networks with a port. */
        p = policy((const char *const[]){ "[fd00:1::/32]:443", NULL }, NULL);
        assert_allowed(p, "fd00:1::5", NULL, 443);
        assert_denied(p, "fd00:1::5", NULL, 80, "unique local (ULA)");
        assert_denied(p, "fd00:2::5", NULL, 443, "unique local (ULA)");
        egress_policy_free(p);
}

static void test_host_wildcards(void **state) {
        EgressPolicy *p = policy(NULL, (const char *const[]){ "*.example.com", "exact.example.org", NULL });

        assert_denied(p, "198.51.100.2", "a.example.com", 443,
                      "host 'a.example.com' is on the deny list (egress_deny '*.example.com')");
        assert_denied(p, "198.51.100.2", "A.B.EXAMPLE.COM.", 443,
                      "host 'A.B.EXAMPLE.COM.' is on the deny list");
        assert_allowed(p, "198.51.100.2", "example.com", 443); /* "*." is below the name, not the name */
        assert_allowed(p, "198.51.100.2", "badexample.com", 443);
        assert_allowed(p, "198.51.100.2", "example.com.evil.net", 443);
        assert_denied(p, "198.51.100.2", "Exact.Example.Org", 443, "on the deny list");
        assert_allowed(p, "198.51.100.2", "sub.exact.example.org", 443);
        assert_allowed(p, "198.51.100.2", NULL, 443); /* no name: name rules cannot match */
        egress_policy_free(p);
}

/* A chained upstream proxy resolves: only names, ports and IP literals can be checked. */
static void test_chained_checks(void **state) {
        EgressPolicy *p = policy((const char *const[]){ "api.internal", NULL },
                                 (const char *const[]){ "*.blocked.test", ":23", NULL });

        assert_allowed(p, NULL, "www.example.com", 443);
        assert_allowed(p, NULL, "api.internal", 443);
        assert_denied(p, NULL, "x.blocked.test", 443, "host 'x.blocked.test' is on the deny list");
        assert_denied(p, NULL, "www.example.com", 23, "port 23 is denied");
        assert_denied(p, NULL, "localhost", 80, "host 'localhost' names this host (loopback)");
        assert_denied(p, NULL, "LocalHost.", 80, "names this host");
        assert_denied(p, NULL, "app.localhost", 80, "names this host");
        assert_allowed(p, NULL, "notlocalhost", 80);
        assert_denied(p, NULL, "10.0.0.1", 80, "private address 10.0.0.1 (RFC 1918)");
        assert_denied(p, NULL, "169.254.169.254", 80, "cloud metadata");
        assert_denied(p, NULL, "::1", 80, "loopback address ::1");
        assert_denied(p, NULL, "[::ffff:127.0.0.1]", 80, "loopback address 127.0.0.1");
        assert_allowed(p, NULL, "198.51.100.2", 80);
        /* When there is an address, a literal host does not replace it. */
        assert_denied(p, "127.0.0.1", "198.51.100.2", 80, "loopback address 127.0.0.1");
        egress_policy_free(p);
}

static void test_rule_parse(void **state) {
        EgressRule rule;
        const char *reason;

        assert_int_equal(egress_rule_parse("10.1.2.0/24", &rule, &reason), 0);
        assert_int_equal(rule.kind, EGRESS_RULE_NETWORK);
        assert_int_equal(rule.family, AF_INET);
        assert_int_equal(rule.prefixlen, 24);
        assert_int_equal(rule.port, 0);
        assert_string_equal(rule.text, "10.1.2.0/24");
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("10.1.2.3", &rule, &reason), 0);
        assert_int_equal(rule.kind, EGRESS_RULE_NETWORK);
        assert_int_equal(rule.prefixlen, 32);
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("10.0.0.0/8:22", &rule, &reason), 0);
        assert_int_equal(rule.prefixlen, 8);
        assert_int_equal(rule.port, 22);
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("fd00::/8", &rule, &reason), 0);
        assert_int_equal(rule.family, AF_INET6);
        assert_int_equal(rule.prefixlen, 8);
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("[fd00::1]:8080", &rule, &reason), 0);
        assert_int_equal(rule.family, AF_INET6);
        assert_int_equal(rule.prefixlen, 128);
        assert_int_equal(rule.port, 8080);
        egress_rule_done(&rule);

        /* The IPv4-mapped form of a network is that IPv4 network. */
        assert_int_equal(egress_rule_parse("::ffff:10.0.0.0/104", &rule, &reason), 0);
        assert_int_equal(rule.family, AF_INET);
        assert_int_equal(rule.prefixlen, 8);
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("API.Example.COM.", &rule, &reason), 0);
        assert_int_equal(rule.kind, EGRESS_RULE_HOST);
        assert_string_equal(rule.name, "api.example.com");
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse("*.Example.com:443", &rule, &reason), 0);
        assert_int_equal(rule.kind, EGRESS_RULE_DOMAIN);
        assert_string_equal(rule.name, ".example.com");
        assert_int_equal(rule.port, 443);
        egress_rule_done(&rule);

        assert_int_equal(egress_rule_parse(":25", &rule, &reason), 0);
        assert_int_equal(rule.kind, EGRESS_RULE_PORT);
        assert_int_equal(rule.port, 25);
        assert_null(rule.name);
        egress_rule_done(&rule);
}

static void test_rule_parse_refusals(void **state) {
        /* clang-format off */
        static const struct {
                const char *text;
                const char *reason;
        } cases[] = {
                { "",                  "empty rule" },
                { ":",                 "the port must be a number from 1 to 65535" },
                { ":0",                "the port must be a number from 1 to 65535" },
                { ":65536",            "the port must be a number from 1 to 65535" },
                { ":-1",               "the port must be a number from 1 to 65535" },
                { "example.com:",      "the port must be a number from 1 to 65535" },
                { "example.com:http",  "the port must be a number from 1 to 65535" },
                { ":443",              NULL },
                { "10.0.0.0/33",       "the prefix length must be a number from 0 to 32" },
                { "10.0.0.0/",         "the prefix length must be a number from 0 to 32" },
                { "10.0.0.0/x",        "the prefix length must be a number from 0 to 32" },
                { "fd00::/129",        "the prefix length must be a number from 0 to 128" },
                { "10.0.0.1/24",       "the address has bits set beyond the prefix length" },
                { "fd00::1/8",         "the address has bits set beyond the prefix length" },
                { "10.1.2",            "not a valid IPv4 or IPv6 address" },
                { "300.1.2.3",         "not a valid IPv4 or IPv6 address" },
                { "1:2:3",             "not a valid IPv4 or IPv6 address" },
                { "[10.0.0.1]",        "only IPv6 addresses go in brackets" },
                { "[fd00::1",          "'[' without ']'" },
                { "[fd00::1]x",        "only ':port' may follow ']'" },
                { "*",                 "'*' is only allowed as the first label ('*.example.com')" },
                { "a.*.com",           "'*' is only allowed as the first label ('*.example.com')" },
                { "*.",                "not a valid host name after '*.'" },
                { "*.*.com",           "not a valid host name after '*.'" },
                { "exa mple.com",      "only printable ASCII without spaces is allowed" },
                { "caf\xc3\xa9.com",   "only printable ASCII without spaces is allowed" },
                { "a..b",              "not a valid host name, address or network" },
                { "-a/b",              "not a valid IPv4 or IPv6 address" },
                { "a_b.example",       NULL },
                { ":25:26",            "not a valid IPv4 or IPv6 address" },
        };
        /* clang-format on */

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                EgressRule rule;
                const char *reason = NULL;
                int r = egress_rule_parse(cases[i].text, &rule, &reason);

                if (!cases[i].reason) {
                        assert_int_equal(r, 0);
                        egress_rule_done(&rule);
                        continue;
                }
                if (r != -EINVAL)
                        fail_msg("rule '%s' was accepted, expected: %s", cases[i].text, cases[i].reason);
                assert_non_null(reason);
                if (strcmp(reason, cases[i].reason) != 0)
                        fail_msg("rule '%s': reason '%s', expected '%s'", cases[i].text, reason,
                                 cases[i].reason);
        }

        /* A policy is refused whole when one of its rules is. */
        EgressPolicy *p = NULL;
        assert_int_equal(egress_policy_new((char *const[]){ "10.0.0.0/8", "bad rule", NULL }, NULL, &p),
                         -EINVAL);
        assert_null(p);
}

static void test_host_name_validity(void **state) {
        char label63[64], label64[65], name254[255];

        assert_true(egress_host_name_is_valid("example.com"));
        assert_true(egress_host_name_is_valid("example.com."));
        assert_true(egress_host_name_is_valid("localhost"));
        assert_true(egress_host_name_is_valid("a-b_c.x1"));
        assert_true(egress_host_name_is_valid("1.2.3.4.nip.io"));
        assert_false(egress_host_name_is_valid(""));
        assert_false(egress_host_name_is_valid("."));
        assert_false(egress_host_name_is_valid("a..b"));
        assert_false(egress_host_name_is_valid(".a"));
        assert_false(egress_host_name_is_valid("127.0.0.1")); /* an address, not a name */
        assert_false(egress_host_name_is_valid("127.1"));
        assert_false(egress_host_name_is_valid("a b"));
        assert_false(egress_host_name_is_valid("a/b"));
        assert_false(egress_host_name_is_valid("a%2eb"));

        memset(label63, 'a', 63);
        label63[63] = '\0';
        memset(label64, 'a', 64);
        label64[64] = '\0';
        assert_true(egress_host_name_is_valid(label63));
        assert_false(egress_host_name_is_valid(label64));
        for (size_t i = 0; i < 254; i++)
                name254[i] = i % 2 ? '.' : 'a';
        name254[253] = 'a';
        name254[254] = '\0';
        assert_false(egress_host_name_is_valid(name254)); /* 254 bytes */
        name254[253] = '\0';
        assert_true(egress_host_name_is_valid(name254)); /* 253 */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_builtin_ranges_edges), cmocka_unit_test(test_embedded_ipv4),
                cmocka_unit_test(test_local_addresses),      cmocka_unit_test(test_host_addresses),
                cmocka_unit_test(test_precedence),           cmocka_unit_test(test_ports),
                cmocka_unit_test(test_host_wildcards),       cmocka_unit_test(test_chained_checks),
                cmocka_unit_test(test_rule_parse),           cmocka_unit_test(test_rule_parse_refusals),
                cmocka_unit_test(test_host_name_validity),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
