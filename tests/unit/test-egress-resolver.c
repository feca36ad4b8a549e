/* Unit tests of src/egress/resolver.c: IP literals at once, names on glibc's helper threads with completion
 * on a signalfd, and abandoned lookups freed once glibc lets go of them. Names come from /etc/hosts only
 * ("localhost"), so no test needs a network. */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "egress/resolver.h"

#define WAIT_MSEC 30000 /* a bound, not an expectation: /etc/hosts answers at once */

static int block_signal(void **state) {
        sigset_t mask;

        assert_int_equal(sigemptyset(&mask), 0);
        assert_int_equal(sigaddset(&mask, RESOLVER_SIGNAL), 0);
        assert_int_equal(sigprocmask(SIG_BLOCK, &mask, NULL), 0);
        return 0;
}

static void test_literals_resolve_at_once(void **state) {
        struct addrinfo *ai = NULL;
        Resolution *pending = NULL;

        assert_int_equal(resolver_start("192.0.2.7", 8080, &ai, &pending), 0);
        assert_null(pending);
        assert_non_null(ai);
        assert_int_equal(ai->ai_family, AF_INET);
        assert_int_equal(ntohs(((struct sockaddr_in *) ai->ai_addr)->sin_port), 8080);
        freeaddrinfo(ai);

        ai = NULL;
        assert_int_equal(resolver_start("2001:db8::1", 443, &ai, &pending), 0);
        assert_int_equal(ai->ai_family, AF_INET6);
        freeaddrinfo(ai);
}

static void test_name_resolves_on_the_signal(void **state) {
        _cleanup_close_ int sfd = resolver_signal_fd();
        struct addrinfo *ai = NULL;
        Resolution *res = NULL;
        struct signalfd_siginfo si;
        int r;

        assert_true(sfd >= 0);
        assert_int_equal(resolver_start("localhost", 80, &ai, &res), 1);
        assert_null(ai);
        assert_non_null(res);
        for (;;) {
                r = resolver_finish(res, &ai);
                if (r != EAI_INPROGRESS)
                        break;
                /* completion arrives as RESOLVER_SIGNAL on the signalfd */
                assert_int_equal(poll(&(struct pollfd){ .fd = sfd, .events = POLLIN }, 1, WAIT_MSEC), 1);
                assert_int_equal(read(sfd, &si, sizeof(si)), (ssize_t) sizeof(si));
                assert_int_equal(si.ssi_signo, RESOLVER_SIGNAL);
        }
        assert_int_equal(r, 0);
        assert_non_null(ai);
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
                if (a->ai_family == AF_INET)
                        assert_int_equal(ntohl(((struct sockaddr_in *) a->ai_addr)->sin_addr.s_addr) >> 24,
                                         127);
                assert_int_equal(a->ai_socktype, SOCK_STREAM);
        }
        freeaddrinfo(ai);
}

static void test_abandoned_lookups_are_reaped(void **state) {
        _cleanup_close_ int sfd = resolver_signal_fd();
        Resolver resolver = { 0 };
        struct addrinfo *ai = NULL;
        Resolution *res = NULL;
        struct signalfd_siginfo si;

        assert_true(sfd >= 0);
        resolver_abandon(&resolver, NULL); /* NULL-safe */
        assert_int_equal(resolver_start("localhost", 80, &ai, &res), 1);
        resolver_abandon(&resolver, res); /* freed now, or kept until glibc is done with it */
        while (resolver.n_orphans > 0) {
                assert_int_equal(poll(&(struct pollfd){ .fd = sfd, .events = POLLIN }, 1, WAIT_MSEC), 1);
                (void) read(sfd, &si, sizeof(si));
                resolver_reap(&resolver);
        }
        resolver_done(&resolver);
        assert_null(resolver.orphans);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_literals_resolve_at_once),
                cmocka_unit_test(test_name_resolves_on_the_signal),
                cmocka_unit_test(test_abandoned_lookups_are_reaped),
        };

        return cmocka_run_group_tests(tests, block_signal, NULL);
}
