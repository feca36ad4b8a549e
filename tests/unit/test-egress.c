/* Unit tests of src/egress/egress.c: the worker's side of the relay process. Starting one drops to nobody,
 * so those tests need root and skip otherwise; the checks of the arguments do not. */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "egress/egress.h"

#define WAIT_MSEC 30000

static int tcp_socket(bool listening, uint16_t *ret_port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        if (listening)
                assert_int_equal(listen(fd, 16), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        if (ret_port)
                *ret_port = ntohs(sa.sin_port);
        return fd;
}

static void test_arguments_are_checked(void **state) {
        _cleanup_close_ int not_listening = tcp_socket(false, NULL), listener = tcp_socket(true, NULL);
        _cleanup_close_ int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        EgressRelay *relay = (EgressRelay *) 0x1;
        Config cfg;

        assert_int_equal(config_init_defaults(&cfg), 0);
        assert_int_equal(egress_start(&cfg, not_listening, "run", &relay), -EINVAL);
        assert_int_equal(egress_start(&cfg, udp, "run", &relay), -EINVAL);
        assert_int_equal(egress_start(&cfg, -EBADF, "run", &relay), -EBADF);
        /* the run ID goes into log records: no spaces or control characters */
        assert_int_equal(egress_start(&cfg, listener, "run id", &relay), -EINVAL);
        assert_int_equal(egress_start(&cfg, listener, "run\n", &relay), -EINVAL);
        free(cfg.proxy_http);
        cfg.proxy_http = strdup("gopher://proxy.example");
        assert_int_equal(egress_start(&cfg, listener, "run", &relay), -EPROTONOSUPPORT);
        assert_ptr_equal(relay, (EgressRelay *) 0x1); /* untouched on failure */

        assert_null(egress_stop(NULL));
        assert_int_equal(egress_denials(NULL), 0);
        assert_int_equal(egress_cpu_usec(NULL), 0);
        config_done(&cfg);
}

static void test_relay_runs_and_counts_denials(void **state) {
        _cleanup_close_ int listener = -EBADF, fd = -EBADF;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        static const char req[] = "CONNECT 192.168.1.1:443 HTTP/1.1\r\n\r\n";
        EgressRelay *relay = NULL;
        char buf[1024] = "";
        uint16_t port;
        Config cfg;
        ssize_t n;

        if (geteuid() != 0)
                skip(); /* the relay drops to nobody */
        assert_int_equal(config_init_defaults(&cfg), 0);
        listener = tcp_socket(true, &port);
        assert_int_equal(egress_start(&cfg, listener, "test-run", &relay), 0);
        listener = safe_close(listener); /* the relay holds its own copy */
        assert_int_equal(egress_denials(relay), 0);

        sa.sin_port = htons(port);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t) strlen(req));
        assert_int_equal(poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, WAIT_MSEC), 1);
        n = recv(fd, buf, sizeof(buf) - 1, 0);
        assert_true(n > 12);
        assert_true(strncmp(buf, "HTTP/1.1 403 ", 13) == 0);
        assert_int_equal(egress_denials(relay), 1); /* counted before the answer is written */

        relay = egress_stop(relay);
        assert_null(relay);
        /* stopped: nobody serves the port any more */
        fd = safe_close(fd);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), -1);
        assert_int_equal(errno, ECONNREFUSED);
        config_done(&cfg);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_arguments_are_checked),
                cmocka_unit_test(test_relay_runs_and_counts_denials),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
