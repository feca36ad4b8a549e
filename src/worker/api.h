#pragma once
/* api: owns the HTTP API of DESIGN §1: the route table, authentication, request bodies, the JSON
 * envelopes and what each route does (a run asked of the runner through runner-client.h, which admits,
 * runs and counts it; the dependency list from packages.h; a new dependency generation through
 * manager-client.h). It knows nothing of sockets: http.c hands it a parsed request and sends what it
 * answers. Handlers log once what they decide to refuse or what failed; the per-request journal record
 * is written by http.c from ApiFacts. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Config Config;
typedef struct Api Api;

typedef struct ApiRequest {
        const char *method;
        const char *url;      /* the path, without the query string */
        const char *api_key;  /* the X-Api-Key header; NULL when absent */
        const char *language; /* the query argument ?language=; NULL when absent */
        const char *body;     /* NUL-terminated after body_len bytes; NULL when there is none */
        size_t body_len;
} ApiRequest;

/* What the request did, for its journal record. Strings are static. */
typedef struct ApiFacts {
        const char *route;  /* the table's path, or NULL for an unknown route */
        int code;           /* the envelope's code; without one, -status for an error (-401), else 0 */
        bool authenticated; /* a route that needs X-Api-Key, and the key was valid (not /health) */
        bool ran;           /* the fields below hold a finished run (language also for a refused one) */
        char run_id[40];    /* the run's hex id, DIFYSANDBOX_RUN_ID of its own record */
        const char *language, *result;
        int exit_code;
        uint64_t run_usec, cpu_usec, memory_peak, queued_usec;
        uint32_t uid;
        unsigned worker_slot;
        size_t code_bytes, stdout_bytes, stderr_bytes;
} ApiFacts;

typedef struct Answer Answer;

typedef struct ApiResponse {
        unsigned status;
        const char *content_type; /* static; NULL with an empty body */
        char *body;               /* malloc()ed, body_len bytes; NULL when empty */
        size_t body_len;
        Answer *answer; /* instead of body: a run's answer, made as it is sent (answer.h) */
        ApiFacts facts;
} ApiResponse;

/* The most body bytes a request may send: code_max plus 64 KiB for JSON and escapes. */
size_t api_body_max(const Config *cfg);

typedef struct RunnerClient RunnerClient;

/* runner: where runs are asked for (not taken); config_generation: the manager's generation cfg belongs
 * to, which api_config_stale() compares with the shared stats. */
int api_new(const Config *cfg, RunnerClient *runner, uint64_t config_generation, Api **ret);
Api *api_free(Api *api); /* NULL-safe, returns NULL */

/* Decides from the request line and headers alone, before any body is read: returns 1 with *ret set
 * when the answer is already known (unknown route: 404; wrong key: 401), 0 when the body is wanted. */
int api_precheck(Api *api, const ApiRequest *req, ApiResponse *ret);

/* Answers a whole request. Returns 0 with *ret set (errors of the request or of the sandbox are answers
 * too), or -ENOMEM when not even an error envelope could be made. */
int api_handle(Api *api, const ApiRequest *req, ApiResponse *ret);

/* The body of a run (body_len bytes, NUL-terminated after them) parsed and bound as api_handle() does, up
 * to its language: 0 when a run would be tried, 1 with *resp set to the 400 it gets, -ENOMEM. Runs
 * nothing; for tests/fuzz. */
int api_run_body_check(const char *body, size_t len, ApiResponse *resp);

/* {"code":code,"message":message,"data":null} with HTTP status, for answers http.c decides (413). */
int api_error(unsigned status, int code, const char *message, ApiResponse *ret);

void api_response_done(ApiResponse *resp);

/* Whether difysandbox-manager published a new configuration since the one api was made with: then the
 * connection asks the runner for it and makes a new Api before its next request (http.c). */
bool api_config_stale(const Api *api);
