#pragma once
/* handler: owns what the runner does for one request, in a process of its own (DESIGN §2, §3): admission,
 * the run (the prepared one a warm slot holds, or one made on demand), the shared stats, the run's
 * journal record, and the reply on the worker's connection. runner.c forks it; `difysandbox run` does
 * not use it (it has no worker to answer). The handler logs what it decides, once. */

#include <stdint.h>

#include "protocol.h"

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

/* Serves a RUNNER_OP_RUN request whose code is in code_fd (already checked with payload_check()). warm,
 * if not NULL, is consumed. Returns 0 once a reply was sent, or the error of sending it. */
int handler_run(const HandlerContext *ctx, const RunnerRequest *req, int code_fd, PreparedRun *warm,
                int conn_fd);

/* Answers RUNNER_OP_CONFIG: the configuration's text, secrets included (the worker needs app.key). */
int handler_config(const HandlerContext *ctx, int conn_fd);

/* A reply without payload parts but status and, for RUNNER_STATUS_FAILED, error and step. */
int handler_reply_status(int conn_fd, RunnerStatus status, int error, const char *step, const char *detail,
                         uint64_t config_generation);
