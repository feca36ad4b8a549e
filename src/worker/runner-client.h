#pragma once
/* runner-client: owns a worker's connection to the runner (DESIGN §2, src/protocol/runner-protocol.h): one
 * SOCK_SEQPACKET connection per worker, made at the first request that needs it (or handed over by
 * `difysandbox serve`), used for one request at a time, made again after the runner restarted. The
 * worker never builds a sandbox: it asks here. Non-logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/runner-protocol.h"

typedef struct Config Config;
typedef struct RunnerClient RunnerClient;

/* fd >= 0: an already connected socket (taken; it cannot be made again). Otherwise the client connects
 * to socket_path when it needs to. */
int runner_client_new(const char *socket_path, int fd, RunnerClient **ret);
RunnerClient *runner_client_free(RunnerClient *c); /* NULL-safe, returns NULL */

typedef struct RunnerResult {
        RunnerReply reply;
        char *parts[_RUNNER_PART_MAX]; /* NUL-terminated after part_len bytes; never NULL once received */
} RunnerResult;

void runner_result_done(RunnerResult *r);

/* Why a call failed, for the API's -500: a static phrase ("cannot reach the runner at '…'" is made from
 * it by the caller). */
typedef enum RunnerClientStage {
        RUNNER_CLIENT_CONNECT, /* no connection could be made: nothing was asked */
        RUNNER_CLIENT_ASK,     /* the request could not be sent: nothing ran */
        RUNNER_CLIENT_ANSWER,  /* the runner ended or broke the connection before answering */
} RunnerClientStage;

/* Sends the request and waits for its reply, at most timeout_usec. wants_preload: the code names a
 * pool_preload module (preload-match.h). On failure returns a negative errno with *reterr_stage set, and
 * drops the connection. */
int runner_client_run(RunnerClient *c, uint32_t language, bool network, bool wants_preload, const char *code,
                      size_t code_len, uint64_t timeout_usec, RunnerResult *ret,
                      RunnerClientStage *reterr_stage);

/* Asks for the configuration in force and loads it into cfg (which the caller has initialized with
 * config_init_defaults()); *ret_generation is the manager's generation it belongs to. On a refused text
 * *reterr (malloc()ed) says why. */
int runner_client_fetch_config(RunnerClient *c, Config *cfg, uint64_t *ret_generation, char **reterr);

const char *runner_client_socket_path(const RunnerClient *c); /* NULL for a handed-over connection */
/* A handed-over connection that failed: it cannot be made again, so the worker should end. */
bool runner_client_broken(const RunnerClient *c);
