#pragma once
/* relay: the egress relay proper, what the relay process (egress.c) runs once it is unprivileged: an HTTP
 * proxy on the run's listener that speaks CONNECT and absolute-form plain HTTP (http-head.c), resolves names
 * itself (resolver.c), checks every address it is about to connect to (egress-policy.c), answers a denial
 * with 403 and a reason, and chains to the configured upstream proxies (upstream.c, socks5.c). It logs each
 * denial itself (egress.h says how many), since the worker cannot while the run goes on. Only egress.c and
 * tests use it. */

#include "common/cleanup.h"

typedef struct Config Config;
typedef struct Relay Relay;

/* The relay of run run_id (its journal records carry it), from cfg's egress rules and proxies, which cfg
 * must outlive. -EINVAL for a rule or proxy that does not parse, -EPROTONOSUPPORT for a proxy of another
 * scheme, -ENOMEM. */
int relay_new(const Config *cfg, const char *run_id, Relay **ret);
Relay *relay_free(Relay *relay); /* NULL-safe, returns NULL */
DEFINE_POINTER_CLEANUP(Relay *, relay_free);

/* Serves listener_fd (a listening TCP socket, non-blocking) until the process is killed: signal_fd is
 * resolver_signal_fd() with RESOLVER_SIGNAL blocked, denial_fd a non-blocking pipe that gets one byte per
 * denial. SIGPIPE must be ignored. Exits the process (EXIT_FAILURE) only when it cannot go on: out of
 * memory for poll()'s set, or poll() failing; the run's connections then fail closed. */
_Noreturn void relay_serve(Relay *relay, int listener_fd, int signal_fd, int denial_fd);
