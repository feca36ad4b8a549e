/* Unit tests of the configuration request (issue 43), both ends as they run: handler_config()
 * (src/runner/handler.c) answers in a forked child, as the runner does, and runner_client_fetch_config()
 * (src/worker/runner-client.c) loads the answer, as a worker does. The worker must get no app.key, only a
 * digest that checks it, and no URL of an index, a registry or a proxy, which may hold a password. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "config/config-file.h"
#include "config/key-digest.h"
#include "protocol/runner-protocol.h"
#include "runner/handler.h"
#include "worker/runner-client.h"

#define KEY "k3y-Secret-123"

static const char *const secrets[] = { KEY,     "pr0xyPW", "s0cksPW", "m1rrorPW",
                                       "npmPW", "bob",     "alice",   "carol" };

static void configured(Config *cfg) {
        assert_int_equal(config_init_defaults(cfg), 0);
        free(cfg->api_key);
        cfg->api_key = strdup(KEY);
        free(cfg->proxy_http);
        cfg->proxy_http = strdup("http://bob:pr0xyPW@proxy.example:3128");
        free(cfg->proxy_https);
        cfg->proxy_https = strdup("http://bob:pr0xyPW@proxy.example:3129");
        free(cfg->proxy_socks5);
        cfg->proxy_socks5 = strdup("socks5://bob:s0cksPW@proxy.example:1080");
        free(cfg->python_pip_mirror_url);
        cfg->python_pip_mirror_url = strdup("https://alice:m1rrorPW@pypi.example/simple");
        free(cfg->npm_registry);
        cfg->npm_registry = strdup("https://carol:npmPW@npm.example/");
        assert_non_null(cfg->api_key);
        assert_non_null(cfg->npm_registry);
}

/* The runner's end: answers n configuration requests on fd, then exits. */
static pid_t runner_answers(const Config *cfg, int fd, unsigned n) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid > 0)
                return pid;
        for (unsigned i = 0; i < n; i++) {
                RunnerRequestWire wire;
                int payload = -EBADF;
                size_t len = 0;
                HandlerContext ctx = { .cfg = cfg, .config_generation = 7 };

                if (runner_recv(fd, &wire, sizeof(wire), 0, &len, &payload) < 0 ||
                    handler_config(&ctx, fd) < 0)
                        _exit(1);
        }
        _exit(0);
}

static void runner_done(pid_t pid) {
        int status;

        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* What goes over the line: the text holds none of the secrets, and says app.key_digest. */
static void test_the_answer_holds_no_secret(void **state) {
        Config cfg;
        RunnerRequestWire req;
        RunnerReplyWire wire;
        RunnerReply reply;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int payload = -EBADF;
        size_t len = 0;
        int sv[2];

        configured(&cfg);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = runner_answers(&cfg, sv[1], 1);
        runner_request_encode(&(RunnerRequest){ .op = RUNNER_OP_CONFIG }, &req);
        assert_int_equal(runner_send(sv[0], &req, sizeof(req), -EBADF), 0);
        assert_int_equal(runner_recv(sv[0], &wire, sizeof(wire), 0, &len, &payload), 0);
        assert_int_equal(runner_reply_decode(&wire, len, &reply), 0);
        assert_int_equal(reply.status, RUNNER_STATUS_CONFIG);
        assert_true(payload >= 0);
        uint64_t offset = 0;
        for (size_t i = 0; i < RUNNER_PART_CONFIG; i++)
                offset += reply.part_len[i];
        assert_int_equal(payload_read(payload, offset, reply.part_len[RUNNER_PART_CONFIG], &text), 0);
        for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
                if (strstr(text, secrets[i]))
                        fail_msg("the worker's configuration holds '%s':\n%s", secrets[i], text);
        assert_non_null(strstr(text, "app.key_digest: \"sha256:"));
        runner_done(pid);
        (void) close(sv[0]);
        (void) close(sv[1]);
        config_done(&cfg);
}

/* What a worker keeps: a digest that takes the key and nothing else, and empty URLs. */
static void test_the_worker_keeps_a_digest_that_checks_the_key(void **state) {
        Config cfg, w;
        RunnerClient *c = NULL;
        uint64_t generation = 0;
        char *why = NULL;
        int sv[2];

        configured(&cfg);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = runner_answers(&cfg, sv[1], 1);
        assert_int_equal(runner_client_new(NULL, sv[0], &c), 0);
        assert_int_equal(config_init_defaults(&w), 0);
        assert_int_equal(runner_client_fetch_config(c, &w, &generation, &why), 0);
        assert_null(why);
        assert_int_equal(generation, 7);
        assert_null(w.api_key);
        assert_true(key_digest_matches(w.api_key_digest, KEY));
        assert_false(key_digest_matches(w.api_key_digest, KEY "x"));
        assert_false(key_digest_matches(w.api_key_digest, ""));
        assert_string_equal(w.proxy_http, "");
        assert_string_equal(w.proxy_https, "");
        assert_string_equal(w.proxy_socks5, "");
        assert_string_equal(w.python_pip_mirror_url, "");
        assert_string_equal(w.npm_registry, "");
        runner_done(pid);
        c = runner_client_free(c); /* closes sv[0] */
        (void) close(sv[1]);
        config_done(&w);
        config_done(&cfg);
}

/* A worker's own configuration (--config, or serve's forked copy) is scrubbed the same way, and the
 * key's bytes are zeroed where they were. */
static void test_a_workers_own_configuration_is_scrubbed(void **state) {
        Config cfg;

        configured(&cfg);
        char *proxy = cfg.proxy_http;
        size_t proxy_len = strlen(proxy);
        assert_int_equal(config_scrub_for_worker(&cfg), 0);
        assert_null(cfg.api_key);
        assert_true(key_digest_matches(cfg.api_key_digest, KEY));
        for (size_t i = 0; i < proxy_len; i++)
                assert_int_equal(proxy[i], 0); /* zeroed in place */
        assert_string_equal(cfg.proxy_https, "");
        assert_string_equal(cfg.python_pip_mirror_url, "");
        assert_string_equal(cfg.npm_registry, "");
        assert_int_equal(config_scrub_for_worker(&cfg), 0); /* again: the digest stays */
        assert_true(key_digest_matches(cfg.api_key_digest, KEY));
        config_done(&cfg);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_the_answer_holds_no_secret),
                cmocka_unit_test(test_the_worker_keeps_a_digest_that_checks_the_key),
                cmocka_unit_test(test_a_workers_own_configuration_is_scrubbed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
