#pragma once
/* handler: owns what the runner does for one request, in a process of its own (DESIGN §2, §3): admission,
 * the run (the prepared one a warm slot holds, or one made on demand), the shared stats, the run's
 * journal record, and the reply on the worker's connection. runner.c forks it; `difysandbox run` takes
 * the same path without a pool or a worker (handler_execute()). The handler logs what it decides, once. */

#include <stdint.h>

#include "protocol/runner-protocol.h"
#include "sandbox/run.h"

typedef struct Admit Admit;
typedef struct Config Config;
typedef struct PreparedRun PreparedRun;
typedef struct Sandbox Sandbox;
typedef struct Stats Stats;

typedef struct HandlerContext {
        const Config *cfg;
        Sandbox *sandbox;
        Admit *admit;
        Stats *stats;               /* may be NULL: runs are then not counted */
        uint64_t config_generation; /* the manager's, of cfg */
} HandlerContext;

/* What a request came to: RAN with out, BUSY or TIMEOUT (admission refused it, counted as rejected), or
 * FAILED with error and failure (the step; logged already). */
typedef struct HandlerResult {
        RunnerStatus status;
        int error;
        RunFailure failure;
        RunOutput out;
        uint64_t queued_usec; /* waiting for a worker slot */
        unsigned worker_slot;
} HandlerResult;

/* Admission, the run (warm, if not NULL, is consumed: used if it fits the request, else one is made
 * now), the stats and the run's journal record. Always returns 0 with *ret set; free it with
 * handler_result_done(). */
int handler_execute(const HandlerContext *ctx, const RunRequest *req, PreparedRun *warm, HandlerResult *ret);
void handler_result_done(HandlerResult *res);

/* Serves a RUNNER_OP_RUN request whose code is in code_fd (already checked with payload_check()). warm,
 * if not NULL, is consumed. Returns 0 once a reply was sent, or the error of sending it. */
int handler_run(const HandlerContext *ctx, const RunnerRequest *req, int code_fd, PreparedRun *warm,
                int conn_fd);

/* Answers RUNNER_OP_CONFIG: the configuration's text, secrets included (the worker needs app.key). */
int handler_config(const HandlerContext *ctx, int conn_fd);

/* A reply without payload parts but status and, for RUNNER_STATUS_FAILED, error and step (its name;
 * _RUN_STEP_INVALID for none). */
int handler_reply_status(int conn_fd, RunnerStatus status, int error, RunStep step, const char *detail,
                         uint64_t config_generation);
