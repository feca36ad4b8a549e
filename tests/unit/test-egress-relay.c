/* Unit tests of src/egress/relay.c: a relay serves a listener of its own in a forked child (without the
 * privilege drop, which is egress.c's), and the test talks to it as a run would, with a destination of its
 * own on 127.0.0.1 that egress_allow opens. Bounded waits only, no timing assertions. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "egress/relay.h"
#include "egress/resolver.h"

#define WAIT_MSEC 30000 /* a bound for a hung relay, not an expectation */

typedef struct Fixture {
        Config cfg;
        pid_t pid;
        int denial_r;
        uint16_t relay_port;
        int dest; /* a listener on 127.0.0.1 the policy allows */
        uint16_t dest_port;
} Fixture;

static int listen_loopback(uint16_t *ret_port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 16), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

static _Noreturn void serve(Relay *relay, int listener, int denial_w) {
        sigset_t mask;
        int sfd;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
        (void) signal(SIGPIPE, SIG_IGN);
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, RESOLVER_SIGNAL);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        sfd = resolver_signal_fd();
        if (sfd < 0 || fcntl(listener, F_SETFL, O_NONBLOCK) < 0)
                _exit(EXIT_FAILURE);
        relay_serve(relay, listener, sfd, denial_w);
}

static int setup(void **state) {
        _cleanup_(relay_freep) Relay *relay = NULL;
        Fixture *f = calloc(1, sizeof(Fixture));
        int listener, denial[2];

        assert_non_null(f);
        assert_int_equal(config_init_defaults(&f->cfg), 0);
        free(f->cfg.egress_allow);
        f->cfg.egress_allow = calloc(2, sizeof(char *));
        assert_non_null(f->cfg.egress_allow);
        f->cfg.egress_allow[0] = strdup("127.0.0.1"); /* an allow rule opens even the built-in ranges */
        assert_int_equal(relay_new(&f->cfg, "test-run", &relay), 0);

        f->dest = listen_loopback(&f->dest_port);
        listener = listen_loopback(&f->relay_port);
        assert_int_equal(pipe2(denial, O_CLOEXEC | O_NONBLOCK), 0);
        f->pid = fork();
        assert_true(f->pid >= 0);
        if (f->pid == 0)
                serve(relay, listener, denial[1]);
        (void) close(listener);
        (void) close(denial[1]);
        f->denial_r = denial[0];
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void) kill(f->pid, SIGKILL); /* our own child, not yet reaped */
        (void) waitpid(f->pid, NULL, 0);
        (void) close(f->denial_r);
        (void) close(f->dest);
        config_done(&f->cfg);
        free(f);
        return 0;
}

static int connect_relay(const Fixture *f) {
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons(f->relay_port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fd;
}

static void send_text(int fd, const char *s) {
        assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t) strlen(s));
}

/* Reads from fd until buf holds needle (or EOF, or the bound): buf is NUL-terminated. */
static bool read_until(int fd, char *buf, size_t size, const char *needle) {
        size_t len = 0;

        buf[0] = '\0';
        while (!strstr(buf, needle) && len + 1 < size) {
                ssize_t n;

                if (poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, WAIT_MSEC) != 1)
                        return false;
                n = recv(fd, buf + len, size - 1 - len, 0);
                if (n <= 0)
                        break;
                len += (size_t) n;
                buf[len] = '\0';
        }
        return strstr(buf, needle) != NULL;
}

static int accept_dest(const Fixture *f) {
        assert_int_equal(poll(&(struct pollfd){ .fd = f->dest, .events = POLLIN }, 1, WAIT_MSEC), 1);
        return accept4(f->dest, NULL, NULL, SOCK_CLOEXEC);
}

static unsigned denials(const Fixture *f) {
        int n = 0;

        assert_int_equal(ioctl(f->denial_r, FIONREAD, &n), 0);
        return (unsigned) n;
}

static void test_malformed_request_gets_400(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = connect_relay(f);
        char buf[4096];

        send_text(fd, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_true(read_until(fd, buf, sizeof(buf), "must be an absolute http:// URL"));
        assert_true(strncmp(buf, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
        assert_non_null(strstr(buf, "Connection: close\r\n"));
        assert_int_equal(denials(f), 0);
}

static void test_oversized_head_gets_431(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = connect_relay(f);
        char line[1024], buf[4096];

        send_text(fd, "GET http://127.0.0.1/ HTTP/1.1\r\n");
        memset(line, 'a', sizeof(line));
        memcpy(line, "X-Filler: ", 10);
        memcpy(line + sizeof(line) - 3, "\r\n", 3);
        for (int i = 0; i < 17; i++) /* past 16 KiB, and never the empty line */
                send_text(fd, line);
        assert_true(read_until(fd, buf, sizeof(buf), "larger than 16 KiB"));
        assert_true(strncmp(buf, "HTTP/1.1 431 ", 13) == 0);
}

static void test_denied_destination_gets_403_and_is_counted(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = connect_relay(f), fd2 = -EBADF;
        char buf[4096];

        send_text(fd, "CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n"); /* RFC 1918: a built-in denial */
        assert_true(read_until(fd, buf, sizeof(buf), "\n\r\n"));
        assert_true(strncmp(buf, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
        assert_int_equal(denials(f), 1);

        fd2 = connect_relay(f);
        send_text(fd2, "GET http://localhost:1/ HTTP/1.1\r\n\r\n"); /* a name denied before any lookup */
        assert_true(read_until(fd2, buf, sizeof(buf), "\n\r\n"));
        assert_true(strncmp(buf, "HTTP/1.1 403 ", 13) == 0);
        assert_int_equal(denials(f), 2);
}

static void test_tunnel_to_an_allowed_destination(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = connect_relay(f), peer = -EBADF;
        char req[128], buf[4096];

        (void) snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: x\r\n\r\nping",
                        f->dest_port);
        send_text(fd, req);
        peer = accept_dest(f);
        assert_true(peer >= 0);
        assert_true(
                read_until(peer, buf, sizeof(buf), "ping")); /* what followed the head goes on as it is */
        assert_string_equal(buf, "ping");
        send_text(peer, "pong");
        assert_true(read_until(fd, buf, sizeof(buf), "pong"));
        assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\npong");
        assert_int_equal(denials(f), 0);
}

static void test_plain_request_is_forwarded_in_origin_form(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = connect_relay(f), peer = -EBADF;
        char req[256], want[256], buf[4096];

        (void) snprintf(
                req, sizeof(req),
                "GET http://127.0.0.1:%u/p?q HTTP/1.1\r\nHost: evil\r\nProxy-Connection: keep-alive\r\n"
                "Accept: */*\r\n\r\n",
                f->dest_port);
        send_text(fd, req);
        peer = accept_dest(f);
        assert_true(peer >= 0);
        (void) snprintf(
                want, sizeof(want),
                "GET /p?q HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAccept: */*\r\nConnection: close\r\n\r\n",
                f->dest_port);
        assert_true(read_until(peer, buf, sizeof(buf), "\r\n\r\n"));
        assert_string_equal(buf, want);
        send_text(peer, "HTTP/1.1 204 No Content\r\n\r\n");
        peer = safe_close(peer);
        assert_true(read_until(fd, buf, sizeof(buf), "204"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_malformed_request_gets_400, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized_head_gets_431, setup, teardown),
                cmocka_unit_test_setup_teardown(test_denied_destination_gets_403_and_is_counted, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_tunnel_to_an_allowed_destination, setup, teardown),
                cmocka_unit_test_setup_teardown(test_plain_request_is_forwarded_in_origin_form, setup,
                                                teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
