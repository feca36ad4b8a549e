/* Unit tests of src/protocol/runner-protocol.c: the decoders refuse every message a worker or the runner
 * does not send (wrong size, magic, version, kind, language, lengths), and payloads must be sealed memfds of
 * the announced size. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol/runner-protocol.h"
#include "runtime/runtime.h"

#define CODE_MAX (UINT64_C(1) << 20)

static RunnerRequestWire run_request(uint64_t code_len) {
        RunnerRequest req = {
                .op = RUNNER_OP_RUN, .language = LANGUAGE_NODEJS, .network = true, .code_len = code_len
        };
        RunnerRequestWire w;

        runner_request_encode(&req, &w);
        return w;
}

static void test_request_round_trip(void **state) {
        RunnerRequestWire w = run_request(42);
        RunnerRequest req;

        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), 0);
        assert_int_equal(req.op, RUNNER_OP_RUN);
        assert_int_equal(req.language, LANGUAGE_NODEJS);
        assert_true(req.network);
        assert_false(req.wants_preload);
        assert_int_equal(req.code_len, 42);
}

/* The preload hint travels beside the network flag, each on its own. */
static void test_request_flags_round_trip(void **state) {
        for (int network = 0; network <= 1; network++)
                for (int wants = 0; wants <= 1; wants++) {
                        RunnerRequest in = { .op = RUNNER_OP_RUN,
                                             .language = LANGUAGE_PYTHON3,
                                             .network = network,
                                             .wants_preload = wants,
                                             .code_len = 1 },
                                      out;
                        RunnerRequestWire w;

                        runner_request_encode(&in, &w);
                        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &out), 0);
                        assert_int_equal(out.network, network);
                        assert_int_equal(out.wants_preload, wants);
                }
}

static void test_request_truncated_or_long_is_refused(void **state) {
        RunnerRequestWire w = run_request(1);
        char big[sizeof(w) + 1];
        RunnerRequest req;

        assert_int_equal(runner_request_decode(&w, sizeof(w) - 1, CODE_MAX, &req), -EBADMSG);
        assert_int_equal(runner_request_decode(&w, 0, CODE_MAX, &req), -EBADMSG);
        memcpy(big, &w, sizeof(w));
        big[sizeof(w)] = 0;
        assert_int_equal(runner_request_decode(big, sizeof(big), CODE_MAX, &req), -EBADMSG);
}

static void test_request_wrong_version_magic_kind(void **state) {
        RunnerRequestWire w;
        RunnerRequest req;

        w = run_request(1);
        w.version = RUNNER_PROTOCOL_VERSION + 1;
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EPROTONOSUPPORT);
        w = run_request(1);
        w.magic ^= 1;
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EBADMSG);
        w = run_request(1);
        w.op = 99;
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EBADMSG);
        w = run_request(1);
        w.language = _LANGUAGE_MAX;
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EBADMSG);
        w = run_request(1);
        w.flags = UINT32_C(1) << 2; /* no such flag */
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EBADMSG);
}

static void test_request_oversized_code_is_refused(void **state) {
        RunnerRequestWire w = run_request(CODE_MAX + 1);
        RunnerRequest req;

        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EMSGSIZE);
        w = run_request(CODE_MAX);
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), 0);
}

static void test_config_request_carries_nothing(void **state) {
        RunnerRequest cfg = { .op = RUNNER_OP_CONFIG };
        RunnerRequestWire w;
        RunnerRequest req;

        runner_request_encode(&cfg, &w);
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), 0);
        assert_int_equal(req.op, RUNNER_OP_CONFIG);
        w.code_len = 5;
        assert_int_equal(runner_request_decode(&w, sizeof(w), CODE_MAX, &req), -EBADMSG);
}

static void test_reply_round_trip_and_limits(void **state) {
        RunnerReply reply = { .status = RUNNER_STATUS_RAN,
                              .result = 2,
                              .exit_code = 137,
                              .warm = true,
                              .uid = 10001,
                              .duration_usec = 5 };
        RunnerReplyWire w;
        RunnerReply back;

        strcpy(reply.run_id, "0123456789abcdef0123456789abcdef");
        reply.part_len[RUNNER_PART_STDOUT] = 3;
        runner_reply_encode(&reply, &w);
        assert_int_equal(runner_reply_decode(&w, sizeof(w), &back), 0);
        assert_int_equal(back.exit_code, 137);
        assert_true(back.warm);
        assert_false(back.stdout_truncated);
        assert_string_equal(back.run_id, reply.run_id);
        assert_int_equal(runner_reply_payload_size(&back), 3);

        assert_int_equal(runner_reply_decode(&w, sizeof(w) - 1, &back), -EBADMSG);
        w.part_len[RUNNER_PART_STDERR] = RUNNER_PAYLOAD_MAX + 1;
        assert_int_equal(runner_reply_decode(&w, sizeof(w), &back), -EMSGSIZE);
        runner_reply_encode(&reply, &w);
        w.status = _RUNNER_STATUS_MAX;
        assert_int_equal(runner_reply_decode(&w, sizeof(w), &back), -EBADMSG);
        runner_reply_encode(&reply, &w);
        w.run_id[0] = '/';
        assert_int_equal(runner_reply_decode(&w, sizeof(w), &back), -EBADMSG);
        runner_reply_encode(&reply, &w);
        w.version = 0;
        assert_int_equal(runner_reply_decode(&w, sizeof(w), &back), -EPROTONOSUPPORT);
}

static void test_payload_sealed_and_sized(void **state) {
        const void *parts[2] = { "ab", "cde" };
        uint64_t lens[2] = { 2, 3 };
        char *text = NULL;
        int fd = -1, pipefd[2];

        assert_int_equal(payload_new(parts, lens, 2, &fd), 0);
        assert_int_equal(payload_check(fd, 5), 0);
        assert_int_equal(payload_check(fd, 4), -EBADMSG);
        assert_int_equal(payload_read(fd, 2, 3, &text), 0);
        assert_string_equal(text, "cde");
        free(text);
        assert_true(write(fd, "x", 1) < 0); /* sealed: its sender cannot change it under the reader */
        assert_int_equal(payload_read(fd, 4, 2, &text), -EBADMSG); /* shorter than announced */
        close(fd);

        /* A pipe could block the runner for ever: refused before a byte is read. */
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        assert_int_equal(payload_check(pipefd[0], 0), -EBADMSG);
        close(pipefd[0]);
        close(pipefd[1]);

        /* An unsealed memfd could change while it is read. */
        fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        assert_true(fd >= 0);
        assert_int_equal(payload_check(fd, 0), -EBADMSG);
        close(fd);
}

static void test_recv_refuses_extra_fds_and_big_messages(void **state) {
        int sv[2], fds[2], got = -1;
        RunnerRequestWire w = run_request(0);
        char buf[sizeof(w)];
        size_t len = 0;

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);

        assert_int_equal(runner_send_fds(sv[0], &w, sizeof(w), fds, 2), 0);
        assert_int_equal(runner_recv(sv[1], buf, sizeof(buf), 0, &len, &got), -EBADMSG); /* two fds */

        char big[sizeof(w) + 10] = { 0 };
        assert_int_equal(runner_send(sv[0], big, sizeof(big), -1), 0);
        assert_int_equal(runner_recv(sv[1], buf, sizeof(buf), 0, &len, &got), -EBADMSG); /* truncated */

        assert_int_equal(runner_send(sv[0], &w, sizeof(w), fds[0]), 0);
        assert_int_equal(runner_recv(sv[1], buf, sizeof(buf), 0, &len, &got), 0);
        assert_int_equal(len, sizeof(w));
        assert_true(got >= 0);
        close(got);

        close(sv[0]);
        assert_int_equal(runner_recv(sv[1], buf, sizeof(buf), 0, &len, &got), -ECONNRESET);
        close(sv[1]);
        close(fds[0]);
        close(fds[1]);
}

/* Issue 24: a message whose fd could not be installed (the receiver's table is full: MSG_CTRUNC) is
 * -EMFILE, one lost message, not -EBADMSG or the end; the next message on the same socket is read. In a
 * child, so that the lowered RLIMIT_NOFILE is its alone. */
static void test_recv_out_of_fds_is_one_lost_message(void **state) {
        int sv[2], fds[2], status = 0;
        pid_t pid;

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                RunnerRequestWire w;
                struct rlimit rl;
                int got = -1, e1, e2;
                size_t len = 0;
                int highest = sv[1] > fds[1] ? sv[1] : fds[1];

                /* Nothing free below the limit: the fd that comes cannot be installed. */
                rl.rlim_cur = rl.rlim_max = (rlim_t) highest + 1;
                for (int fd = 0; fd <= highest; fd++)
                        if (fcntl(fd, F_GETFD) < 0)
                                (void) dup2(sv[1], fd);
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(10);
                e1 = runner_recv(sv[1], &w, sizeof(w), 0, &len, &got);
                e2 = runner_recv(sv[1], &w, sizeof(w), 0, &len, &got);
                _exit(e1 == -EMFILE && e2 == 0 && got < 0 && len == sizeof(w) ? 0 : 11);
        }
        RunnerRequestWire w = run_request(0);
        assert_int_equal(runner_send(sv[0], &w, sizeof(w), fds[0]), 0); /* its fd is dropped */
        assert_int_equal(runner_send(sv[0], &w, sizeof(w), -1), 0);     /* and this one still read */
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        close(sv[0]);
        close(sv[1]);
        close(fds[0]);
        close(fds[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_round_trip),
                cmocka_unit_test(test_request_flags_round_trip),
                cmocka_unit_test(test_request_truncated_or_long_is_refused),
                cmocka_unit_test(test_request_wrong_version_magic_kind),
                cmocka_unit_test(test_request_oversized_code_is_refused),
                cmocka_unit_test(test_config_request_carries_nothing),
                cmocka_unit_test(test_reply_round_trip_and_limits),
                cmocka_unit_test(test_payload_sealed_and_sized),
                cmocka_unit_test(test_recv_refuses_extra_fds_and_big_messages),
                cmocka_unit_test(test_recv_out_of_fds_is_one_lost_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
