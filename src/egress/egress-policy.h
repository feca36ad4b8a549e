#pragma once
/* egress-policy: owns the decision whether the egress relay of a run (relay.c) may connect to a
 * destination, and the syntax of the egress_allow and egress_deny rules (difysandbox.conf(5), "NETWORK
 * EGRESS"). Pure logic: no I/O except getifaddrs() in egress_policy_add_host_addresses(), and it never logs.
 * config-file.c checks rules with egress_rule_parse() when it loads them; nothing else parses them.
 *
 * Order of the decision, first match wins:
 *   1. an egress_deny rule (host name, CIDR or port)                       → denied
 *   2. an egress_allow rule naming the destination (host name or CIDR)     → allowed, even into the
 *      built-in ranges: an operator may open an internal API
 *   3. the built-in ranges (loopback, RFC 1918, link-local, CGNAT, ULA, multicast, ...), the names
 *      "localhost" and "*.localhost", and this host's own addresses        → denied
 *   4. when egress_allow holds ":port" rules, a port that none of them names → denied
 *   5. otherwise                                                           → allowed
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address. An IPv6 address that embeds an IPv4
 * one (NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) is checked as itself and as what it embeds.
 * The documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are not
 * denied. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct Config Config;
typedef struct EgressPolicy EgressPolicy;
struct sockaddr;

/* One item of egress_allow or egress_deny:
 *   "10.1.2.0/24", "10.1.2.3", "fd00::/8", "[fd00::1]"   an address or network (CIDR), every port
 *   "api.example.com"                                      exactly this host name, every port
 *   "*.example.com"                                        every name below example.com (not itself)
 *   "api.example.com:443", "10.0.0.0/8:22", "[fd00::/8]:8080"   the same, one port only
 *   ":25"                                                  every destination on this port
 * Host names are case-insensitive; a trailing dot is ignored. */
typedef enum EgressRuleKind {
        EGRESS_RULE_PORT,    /* ":port": any host */
        EGRESS_RULE_NETWORK, /* an address or CIDR */
        EGRESS_RULE_HOST,    /* one host name */
        EGRESS_RULE_DOMAIN,  /* "*.example.com": names ending in ".example.com" */
        _EGRESS_RULE_KIND_MAX,
        _EGRESS_RULE_KIND_INVALID = -EINVAL,
} EgressRuleKind;

typedef struct EgressRule {
        EgressRuleKind kind;
        char *text;          /* the rule as written, for reasons */
        int family;          /* NETWORK: AF_INET or AF_INET6 */
        uint8_t address[16]; /* NETWORK: host bits zero; IPv4 in the first 4 bytes */
        unsigned prefixlen;  /* NETWORK */
        char *name;          /* HOST: the name; DOMAIN: the suffix, ".example.com"; lower case */
        uint16_t port;       /* 0: every port */
} EgressRule;

/* Parses one rule. Returns 0, -EINVAL with *reterr_reason (static text, for the operator) saying why, or
 * -ENOMEM. *ret is set only on success; free it with egress_rule_done(). */
int egress_rule_parse(const char *text, EgressRule *ret, const char **reterr_reason);
void egress_rule_done(EgressRule *rule);

/* A policy of the given rule lists (NULL-terminated, either may be NULL), without this host's addresses.
 * -EINVAL when a rule does not parse (config_load() refuses those first), -ENOMEM. */
int egress_policy_new(char *const *allow, char *const *deny, EgressPolicy **ret);
/* cfg->egress_allow and cfg->egress_deny, plus every address of this host (see below). */
int egress_policy_new_from_config(const Config *cfg, EgressPolicy **ret);
EgressPolicy *egress_policy_free(EgressPolicy *policy); /* NULL-safe, returns NULL */

/* Adds an address that runs must not reach because it is this host's own (AF_INET or AF_INET6). */
int egress_policy_add_local_address(EgressPolicy *policy, const struct sockaddr *addr);
/* Adds every address of every interface of the calling process's network namespace (getifaddrs()). */
int egress_policy_add_host_addresses(EgressPolicy *policy);

/* May a run reach port on addr, asked for by the name host? addr is the address about to be connected to;
 * NULL when a chained upstream proxy resolves the name, and then only the rules of host names and ports
 * apply, and host is checked as an address if it is an IP literal. host (the name the request gave) may
 * be NULL when there is none. Returns 0 when allowed, -EACCES when denied with *reterr_reason set to the
 * reason, for the program and the journal ("loopback address 127.0.0.1 is not reachable from runs"),
 * valid until the next call on this policy or its free. */
int egress_policy_check(EgressPolicy *policy, const struct sockaddr *addr, const char *host, uint16_t port,
                        const char **reterr_reason);

/* Whether host is a host name the rules and the relay accept: letters, digits, '-', '_' and dots, labels
 * of 1 to 63 bytes, 253 bytes at most, an optional trailing dot. IP literals are not names. */
bool egress_host_name_is_valid(const char *host);
