#pragma once
/* runner: owns the privileged side of the data plane (DESIGN §2): the connections of workers, the warm
 * pool's processes (pool.h, slot.h), the handler processes that serve requests (handler.h), and the
 * configuration they use. One sd-event loop, single-threaded: it decodes each request (protocol.h),
 * answers RUNNER_OP_CONFIG itself, and hands each run to an idle slot of its language or to a process
 * forked for it, so that no run ever blocks the loop. A connection's next request is read only once its
 * handler has exited, so a worker's requests are served in turn.
 *
 * Used by difysandbox-runner (socket-activated, runner-main.c) and by `difysandbox serve`, which forks
 * it as its first child and hands it one socketpair per HTTP connection. */

#include <stdbool.h>

typedef struct Config Config;
typedef struct Runner Runner;

/* Takes cfg (config_done() and free() when replaced or at the end). reloadable: cfg came from the
 * default places, so a configuration the manager publishes later replaces it. Blocks SIGCHLD, SIGTERM
 * and SIGINT for the event loop. Logs why it fails. */
int runner_new(Config *cfg, bool reloadable, Runner **ret);
Runner *runner_free(Runner *r); /* NULL-safe; kills the pool's idle slots */

/* A listening AF_UNIX SOCK_SEQPACKET socket: each connection's peer must be root or worker_user. */
int runner_add_listener(Runner *r, int fd);
/* A socket on which each message brings one connected socket (serve's per-connection socketpairs); the
 * runner ends when it is closed. */
int runner_add_handoff(Runner *r, int fd);

/* Runs until SIGTERM or SIGINT (or the hand-off socket's end). Returns 0, or a negative errno. */
int runner_run(Runner *r);
