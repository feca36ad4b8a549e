/* runner-client: see runner-client.h. */

#include "runner-client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/time-util.h"
#include "config/config-file.h"

#define CONFIG_TIMEOUT_USEC (UINT64_C(10) * USEC_PER_SEC)

struct RunnerClient {
        char *socket_path; /* NULL: handed over, cannot reconnect */
        int fd;
        bool broken; /* handed over, and it failed */
};

int runner_client_new(const char *socket_path, int fd, RunnerClient **ret) {
        RunnerClient *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->fd = fd;
        if (fd < 0) {
                c->socket_path = strdup(socket_path);
                if (!c->socket_path) {
                        free(c);
                        return -ENOMEM;
                }
        }
        *ret = c;
        return 0;
}

RunnerClient *runner_client_free(RunnerClient *c) {
        if (c) {
                (void) safe_close(c->fd);
                free(c->socket_path);
                free(c);
        }
        return NULL;
}

const char *runner_client_socket_path(const RunnerClient *c) {
        return c->socket_path;
}

void runner_result_done(RunnerResult *r) {
        for (size_t i = 0; i < _RUNNER_PART_MAX; i++)
                free(r->parts[i]);
        *r = (RunnerResult){ 0 };
}

static int client_connect(RunnerClient *c) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (c->fd >= 0)
                return 0;
        if (!c->socket_path)
                return -ENOTCONN; /* serve's socketpair is gone: so is the runner */
        if (strlen(c->socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, c->socket_path); /* length checked */
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        c->fd = TAKE_FD(fd);
        return 0;
}

static void client_drop(RunnerClient *c) {
        if (c->socket_path)
                c->fd = safe_close(c->fd);
        else
                c->broken = true; /* a handed-over socket stays, so that every later call fails alike */
}

bool runner_client_broken(const RunnerClient *c) {
        return c->broken;
}

/* Waits for the reply and its parts. */
static int receive_reply(RunnerClient *c, uint64_t timeout_usec, RunnerResult *ret) {
        _cleanup_close_ int payload = -EBADF;
        RunnerReplyWire wire;
        RunnerResult res = { 0 };
        uint64_t deadline = now(CLOCK_MONOTONIC) + timeout_usec, offset = 0;
        size_t len = 0;
        int r;

        for (;;) {
                struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
                uint64_t now_usec = now(CLOCK_MONOTONIC);

                if (now_usec >= deadline)
                        return -ETIMEDOUT;
                r = poll(&pfd, 1, (int) ((deadline - now_usec) / 1000 + 1));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0)
                        break;
        }
        r = runner_recv(c->fd, &wire, sizeof(wire), 0, &len, &payload);
        if (r < 0)
                return r;
        r = runner_reply_decode(&wire, len, &res.reply);
        if (r < 0)
                return r;
        uint64_t size = runner_reply_payload_size(&res.reply);
        if (size > 0 && payload < 0)
                return -EBADMSG;
        if (size > 0) {
                r = payload_check(payload, size);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < _RUNNER_PART_MAX; i++) {
                if (size > 0)
                        r = payload_read(payload, offset, res.reply.part_len[i], &res.parts[i]);
                else
                        r = (res.parts[i] = strdup("")) ? 0 : -ENOMEM;
                if (r < 0) {
                        runner_result_done(&res);
                        return r;
                }
                offset += res.reply.part_len[i];
        }
        *ret = res;
        return 0;
}

/* Sends one request; a connection found closed (the runner restarted since) is made again once, which is
 * safe because nothing was asked on it. */
static int ask(RunnerClient *c, const RunnerRequest *req, int payload, RunnerClientStage *reterr_stage) {
        RunnerRequestWire wire;
        int r;

        runner_request_encode(req, &wire);
        for (int attempt = 0;; attempt++) {
                r = client_connect(c);
                if (r < 0) {
                        *reterr_stage = RUNNER_CLIENT_CONNECT;
                        return r;
                }
                r = runner_send(c->fd, &wire, sizeof(wire), payload);
                if (r >= 0)
                        return 0;
                client_drop(c);
                if (attempt > 0 || !c->socket_path || (r != -EPIPE && r != -ECONNRESET && r != -ENOTCONN)) {
                        *reterr_stage = RUNNER_CLIENT_ASK;
                        return r;
                }
        }
}

int runner_client_run(RunnerClient *c, uint32_t language, bool network, bool wants_preload, const char *code,
                      size_t code_len, uint64_t timeout_usec, RunnerResult *ret,
                      RunnerClientStage *reterr_stage) {
        _cleanup_close_ int payload = -EBADF;
        RunnerRequest req = { .op = RUNNER_OP_RUN,
                              .language = language,
                              .network = network,
                              .wants_preload = wants_preload,
                              .code_len = code_len };
        const void *parts[1] = { code };
        uint64_t lens[1] = { code_len };
        int r;

        r = payload_new(parts, lens, 1, &payload);
        if (r < 0) {
                *reterr_stage = RUNNER_CLIENT_ASK;
                return r;
        }
        r = ask(c, &req, payload, reterr_stage);
        if (r < 0)
                return r;
        r = receive_reply(c, timeout_usec, ret);
        if (r < 0) {
                client_drop(c);
                *reterr_stage = RUNNER_CLIENT_ANSWER;
                return r;
        }
        if (ret->reply.status == RUNNER_STATUS_CONFIG) {
                runner_result_done(ret);
                client_drop(c);
                *reterr_stage = RUNNER_CLIENT_ANSWER;
                return -EBADMSG;
        }
        return 0;
}

int runner_client_fetch_config(RunnerClient *c, Config *cfg, uint64_t *ret_generation, char **reterr) {
        _cleanup_(runner_result_done) RunnerResult res = { 0 };
        _cleanup_(config_error_done) ConfigError err = { 0 };
        _cleanup_close_ int fd = -EBADF;
        RunnerClientStage stage;
        RunnerRequest req = { .op = RUNNER_OP_CONFIG };
        char path[64];
        int r;

        *reterr = NULL;
        r = ask(c, &req, -EBADF, &stage);
        if (r >= 0)
                r = receive_reply(c, CONFIG_TIMEOUT_USEC, &res);
        if (r >= 0 && res.reply.status != RUNNER_STATUS_CONFIG)
                r = -EBADMSG;
        if (r < 0) {
                client_drop(c);
                return r;
        }
        /* config_load() reads a file: the text goes through a sealed memfd of our own. */
        const void *parts[1] = { res.parts[RUNNER_PART_CONFIG] };
        uint64_t lens[1] = { res.reply.part_len[RUNNER_PART_CONFIG] };
        r = payload_new(parts, lens, 1, &fd);
        if (r < 0)
                return r;
        (void) snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = config_load(cfg, path, "", NULL, &err);
        if (r < 0 && err.message)
                *reterr = TAKE_PTR(err.message);
        if (r < 0)
                return r;
        *ret_generation = res.reply.config_generation;
        return 0;
}
