#pragma once
/* resolver: the egress relay's name lookups (relay.c), none of which may stall the others.
 *
 * Why getaddrinfo_a() rather than alarm(): glibc's resolver restarts its poll() after EINTR, so an alarm
 * cannot bound getaddrinfo() without siglongjmp() out of it, which would leak its sockets and could leave
 * malloc's lock held. getaddrinfo_a() resolves on glibc's helper threads; completion is signalled with
 * RESOLVER_SIGNAL, which the relay blocks and reads from a signalfd (resolver_signal_fd()). A lookup
 * nobody waits for any more is abandoned: gai_cancel() cannot stop a running lookup, so its request is
 * kept aside in the Resolver until glibc reports it done, then freed.
 *
 * Never logs. Only src/egress uses it. */

#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define RESOLVER_SIGNAL SIGUSR1

typedef struct Resolution Resolution;

/* The abandoned lookups glibc still runs. Zero-initialised; freed with resolver_done(). */
typedef struct Resolver {
        Resolution **orphans;
        size_t n_orphans;
} Resolver;

/* A non-blocking signalfd for RESOLVER_SIGNAL, which the caller has blocked; or -errno. */
int resolver_signal_fd(void);

/* Starts resolving name (TCP, IPv4 and IPv6): an IP literal at once (returns 0, *ret_now holds the
 * addresses), a name with getaddrinfo_a() (returns 1, *ret_pending is the lookup to finish with
 * resolver_finish()). -ENOMEM, or -EAGAIN when glibc cannot start a lookup. */
int resolver_start(const char *name, uint16_t port, struct addrinfo **ret_now, Resolution **ret_pending);

/* EAI_INPROGRESS while the lookup runs (res is kept); else res is freed and the result is 0 with *ret set
 * (freeaddrinfo() it), or the EAI_ error (gai_strerror() says it). */
int resolver_finish(Resolution *res, struct addrinfo **ret);

/* A lookup nobody waits for any more: freed now if glibc lets go of it, else once resolver_reap() sees it
 * done. NULL-safe. */
void resolver_abandon(Resolver *resolver, Resolution *res);

/* Frees the abandoned lookups that are done. Call it whenever RESOLVER_SIGNAL arrived. */
void resolver_reap(Resolver *resolver);

/* Frees the orphans' list; lookups still running are left to the exiting process. */
void resolver_done(Resolver *resolver);
