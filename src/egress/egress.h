#pragma once
/* egress: the only way out of a run with network, and the public face of src/egress. Such a run has a
 * network namespace of its own holding only lo, and on it a TCP listener (127.0.0.1:3128,
 * src/sandbox/netns.h) that its child made and handed to the worker. egress_start() forks one relay
 * process per run, at the run's first connection (src/sandbox/run.c), that serves that listener from the
 * worker's (the host's) network namespace, as nobody (65534) without capabilities: an HTTP proxy that speaks
 * CONNECT and absolute-form plain HTTP (http-head.c), resolves names itself (resolver.c), checks every
 * address it is about to connect to with egress-policy.c (the address checked is the address connected to),
 * answers a denial with 403 and a reason, and chains to proxy.http, proxy.https or proxy.socks5 when the
 * configuration names them (upstream.c, socks5.c). The loop is relay.c. The run reaches it through its proxy
 * variables (src/sandbox/run.c) and, for Node.js, the preloaded src/runtime/nodejs-proxy.js.
 *
 * The relay process is the only part of the run path that logs: one journal record per denial
 * (MESSAGE_ID=MESSAGE_EGRESS_DENIED_STR, the run ID, host, port, address and reason) for the first five
 * denials of a run, then one record saying the rest are only counted (egress_denials()), written by the
 * relay process, which the worker cannot do while the run goes on. Nothing else here logs.
 *
 * Only the worker calls this, one relay per run with network, and it stops the relay with the run. */

#include <stddef.h>
#include <stdint.h>

typedef struct Config Config;
typedef struct EgressRelay EgressRelay;

/* MESSAGE_ID of the journal record of a denial (catalog/difysandbox.catalog). */
#define MESSAGE_EGRESS_DENIED_STR "f127cd6b178f4d42ba2a22463bc2ec24"

/* Forks the relay of the run run_id (its journal records carry it) serving listener_fd, a listening TCP
 * socket. listener_fd stays the caller's: the relay holds its own copy, so close yours once this returns.
 * Returns once the relay runs unprivileged, or -errno: -ENOTSOCK or -EINVAL when listener_fd is not a
 * listening TCP socket, -EINVAL for an egress rule or a proxy.http/https/socks5 that does not parse,
 * -EPROTONOSUPPORT for a proxy that is not http://, socks5:// or socks5h:// (or a socks5 proxy with a user),
 * what the relay process met while dropping its privileges, -ENOMEM. Non-logging. */
int egress_start(const Config *cfg, int listener_fd, const char *run_id, EgressRelay **ret);

/* SIGKILLs the relay (through its pidfd: its own child, never a recycled PID) and reaps it. Connections
 * still relayed end with it. NULL-safe, returns NULL. */
EgressRelay *egress_stop(EgressRelay *relay);

/* CPU time the relay has used so far, all its threads, in microseconds; 0 when it cannot be read. The
 * relay serves only its run, so run.c charges this to the run's CPU time (it cannot join the run's scope:
 * the runs' slice denies IP traffic, which the relay exists to carry). */
uint64_t egress_cpu_usec(const EgressRelay *relay);

/* Denials so far (requests the policy refused with 403), for the run's record. At most 65536: the relay
 * reports each one as a byte on a pipe and stops counting when it is full. */
unsigned egress_denials(const EgressRelay *relay);

/* Whether url is a proxy the relay can chain to (proxy.http, proxy.https, proxy.socks5;
 * difysandbox.conf(5)): 0 (also for ""), -EPROTONOSUPPORT for another scheme or a socks5 proxy with a user,
 * -EINVAL when it does not parse as SCHEME://HOST[:PORT], -ENOMEM. config-file.c refuses such values at load
 * time. */
int egress_proxy_url_check(const char *url);
