/* resolver: see resolver.h. */

#include "resolver.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

struct Resolution {
        struct gaicb cb; /* glibc keeps a pointer to this until the lookup is done */
        struct addrinfo hints;
        char *name;
        char service[sizeof("65535")];
};

static void resolution_free(Resolution *res) {
        if (!res)
                return;
        if (res->cb.ar_result)
                freeaddrinfo(res->cb.ar_result);
        free(res->name);
        free(res);
}

int resolver_signal_fd(void) {
        sigset_t mask;
        int fd;

        if (sigemptyset(&mask) < 0 || sigaddset(&mask, RESOLVER_SIGNAL) < 0)
                return -errno;
        fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int resolver_start(const char *name, uint16_t port, struct addrinfo **ret_now, Resolution **ret_pending) {
        struct addrinfo hints = {
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
                .ai_protocol = IPPROTO_TCP,
                .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
        };
        char service[sizeof("65535")];
        struct addrinfo *result = NULL;
        Resolution *res;

        (void) snprintf(service, sizeof(service), "%u", port);
        if (getaddrinfo(name, service, &hints, &result) == 0) {
                *ret_now = result;
                return 0;
        }

        res = calloc(1, sizeof(Resolution));
        if (!res || !(res->name = strdup(name))) {
                free(res);
                return -ENOMEM;
        }
        memcpy(res->service, service, sizeof(service));
        res->hints = hints;
        res->hints.ai_flags = AI_NUMERICSERV;
        res->cb = (struct gaicb){ .ar_name = res->name,
                                  .ar_service = res->service,
                                  .ar_request = &res->hints };

        struct gaicb *list[] = { &res->cb };
        struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = RESOLVER_SIGNAL };
        if (getaddrinfo_a(GAI_NOWAIT, list, 1, &sev) != 0) {
                resolution_free(res);
                return -EAGAIN;
        }
        *ret_pending = res;
        return 1;
}

int resolver_finish(Resolution *res, struct addrinfo **ret) {
        struct addrinfo *result;
        int r;

        r = gai_error(&res->cb);
        if (r == EAI_INPROGRESS)
                return r;
        result = res->cb.ar_result;
        res->cb.ar_result = NULL;
        resolution_free(res);
        if (r != 0) {
                if (result)
                        freeaddrinfo(result);
                return r;
        }
        *ret = result;
        return 0;
}

void resolver_abandon(Resolver *resolver, Resolution *res) {
        Resolution **o;

        if (!res)
                return;
        if (gai_cancel(&res->cb) != EAI_NOTCANCELED) {
                resolution_free(res);
                return;
        }
        o = reallocarray(resolver->orphans, resolver->n_orphans + 1, sizeof(Resolution *));
        if (!o)
                return; /* leaked rather than freed under glibc's feet */
        resolver->orphans = o;
        resolver->orphans[resolver->n_orphans++] = res;
}

void resolver_reap(Resolver *resolver) {
        for (size_t i = 0; i < resolver->n_orphans;) {
                if (gai_error(&resolver->orphans[i]->cb) == EAI_INPROGRESS) {
                        i++;
                        continue;
                }
                resolution_free(resolver->orphans[i]);
                resolver->orphans[i] = resolver->orphans[--resolver->n_orphans];
        }
}

void resolver_done(Resolver *resolver) {
        free(resolver->orphans);
        *resolver = (Resolver){ 0 };
}
