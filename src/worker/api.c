/* api: see api.h.
 *
 * HTTP statuses follow upstream dify-sandbox (gin), because Dify's client reads the envelope only from
 * an HTTP 200 and reports any other status as "please check if the sandbox service is running":
 *   200  success (code 0), and the envelopes of what happened while serving a valid request: -400
 *        "network is disabled, …" and -500 (sandbox or server failure), so that their message reaches
 *        Dify's user;
 *   400  -400 for a body that cannot be bound (bad JSON, wrong type, missing field) and for an
 *        unsupported language; 401 with an empty body for a wrong X-Api-Key; 404 "404 page not found"
 *        for an unknown route or a known route with the wrong method (gin does not answer 405);
 *   503  -503 "Too many requests": max_requests in flight, or no worker slot within the queue's bound.
 * http.c adds 413 (-400 "request body too large"). */

#include "api.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "answer.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/packages.h"
#include "common/run-result.h"
#include "common/stats.h"
#include "common/time-util.h"
#include "common/utf8.h"
#include "config/key-digest.h"
#include "manager-client.h"
#include "runner-client.h"
#include "runner/admit.h"
#include "runtime/preload-match.h"
#include "runtime/runtime.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define CONTENT_TYPE_JSON "application/json; charset=utf-8"
#define CONTENT_TYPE_TEXT "text/plain; charset=utf-8"
#define BODY_OVERHEAD (64U * 1024U)
#define DEPENDENCY_JOB_TIMEOUT_USEC (UINT64_C(600) * USEC_PER_SEC)
#define RUN_ANSWER_MARGIN_USEC (UINT64_C(30) * USEC_PER_SEC)

_Static_assert(RUNNER_RUN_ID_MAX < sizeof(((ApiFacts *) NULL)->run_id), "ApiFacts.run_id holds a run id");

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);
DEFINE_POINTER_CLEANUP(json_tokener *, json_tokener_free);

struct Api {
        const Config *cfg;
        RunnerClient *runner;       /* not owned: the connection's, kept across reloads */
        Stats *stats;               /* read-only: the configuration generation (api_config_stale()) */
        uint64_t config_generation; /* the manager's, when cfg was loaded (api_config_stale()) */
};

typedef int (*ApiHandler)(Api *api, const ApiRequest *req, ApiResponse *resp);

typedef struct ApiRoute {
        const char *method;
        const char *path;
        bool auth; /* X-Api-Key must equal app.key */
        ApiHandler handler;
} ApiRoute;

static int api_handle_health(Api *api, const ApiRequest *req, ApiResponse *resp);
static int api_handle_run(Api *api, const ApiRequest *req, ApiResponse *resp);
static int api_handle_dependencies(Api *api, const ApiRequest *req, ApiResponse *resp);
static int api_handle_dependencies_update(Api *api, const ApiRequest *req, ApiResponse *resp);
static int api_handle_dependencies_refresh(Api *api, const ApiRequest *req, ApiResponse *resp);

/* clang-format off */
static const ApiRoute routes[] = {
        /* method  path                                auth   handler */
        { "GET",   "/health",                          false, api_handle_health },
        { "POST",  "/v1/sandbox/run",                  true,  api_handle_run },
        { "GET",   "/v1/sandbox/dependencies",         true,  api_handle_dependencies },
        { "POST",  "/v1/sandbox/dependencies/update",  true,  api_handle_dependencies_update },
        { "GET",   "/v1/sandbox/dependencies/refresh", true,  api_handle_dependencies_refresh },
};
/* clang-format on */

size_t api_body_max(const Config *cfg) {
        return cfg->code_max > SIZE_MAX - BODY_OVERHEAD ? SIZE_MAX : (size_t) cfg->code_max + BODY_OVERHEAD;
}

int api_new(const Config *cfg, RunnerClient *runner, uint64_t config_generation, Api **ret) {
        Api *api;
        int r;

        api = calloc(1, sizeof(*api));
        if (!api)
                return -ENOMEM;
        api->cfg = cfg;
        api->runner = runner;
        /* Only to notice a reload: without the file, the connection keeps its configuration. */
        r = stats_open(cfg->state_dir, &api->stats);
        if (r < 0)
                log_debug_errno(r, "Cannot open the shared stats in %s, reloads are not noticed: %m",
                                cfg->state_dir);
        api->config_generation = config_generation;
        *ret = api;
        return 0;
}

bool api_config_stale(const Api *api) {
        return api->stats && stats_config_generation(api->stats) != api->config_generation;
}

Api *api_free(Api *api) {
        if (!api)
                return NULL;
        stats_close(api->stats);
        free(api);
        return NULL;
}

void api_response_done(ApiResponse *resp) {
        free(resp->body);
        answer_free(resp->answer);
        *resp = (ApiResponse){ 0 };
}

/* ---- answers ---- */

/* The body of resp becomes a copy of o's text: json-c owns the string it prints, libmicrohttpd wants
 * a malloc()ed buffer it can free. */
static int reply_json(ApiResponse *resp, unsigned status, json_object *o) {
        const char *text;
        size_t len;
        char *body;

        text = json_object_to_json_string_length(o, JSON_FLAGS, &len);
        if (!text)
                return -ENOMEM;
        body = malloc(len + 1);
        if (!body)
                return -ENOMEM;
        memcpy(body, text, len + 1);

        free(resp->body);
        resp->status = status;
        resp->content_type = CONTENT_TYPE_JSON;
        resp->body = body;
        resp->body_len = len;
        return 0;
}

/* A JSON string of s (len bytes, NUL bytes included). Text that is not UTF-8 (a helper's stderr) has its
 * invalid sequences replaced by U+FFFD, as upstream's Go encoder does, so the answer is always valid
 * JSON that Dify can decode. */
static json_object *json_string_utf8(const char *s, size_t len) {
        _cleanup_free_ char *clean = NULL;
        size_t clean_len;

        if (!s)
                s = "";
        if (len > INT_MAX)
                return NULL;
        if (utf8_is_valid(s, len))
                return json_object_new_string_len(s, (int) len);
        if (utf8_sanitize(s, len, &clean, &clean_len) < 0 || clean_len > INT_MAX)
                return NULL;
        return json_object_new_string_len(clean, (int) clean_len);
}

static int json_add_int(json_object *o, const char *key, int value) {
        json_object *v = json_object_new_int(value);

        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int json_add_string_utf8(json_object *o, const char *key, const char *value, size_t len) {
        json_object *v = json_string_utf8(value, len);

        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* {"code":code,"message":message,"data":data}; takes data (NULL prints null). */
static int reply_envelope(ApiResponse *resp, unsigned status, int code, const char *message,
                          json_object *data) {
        _cleanup_(json_object_putp) json_object *o = NULL, *d = data;
        int r;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = json_add_int(o, "code", code);
        if (r >= 0)
                r = json_add_string_utf8(o, "message", message, strlen(message));
        if (r < 0)
                return r;
        if (json_object_object_add(o, "data", d) < 0)
                return -ENOMEM;
        (void) TAKE_PTR(d); /* o owns it now */
        resp->facts.code = code;
        return reply_json(resp, status, o);
}

static int reply_error(ApiResponse *resp, unsigned status, int code, const char *message) {
        return reply_envelope(resp, status, code, message, NULL);
}

static int reply_errorf(ApiResponse *resp, unsigned status, int code, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
static int reply_errorf(ApiResponse *resp, unsigned status, int code, const char *format, ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&message, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return reply_error(resp, status, code, message);
}

static void reply_empty(ApiResponse *resp, unsigned status) {
        free(resp->body);
        resp->status = status;
        /* An error answered without an envelope (401, 404) is recorded with minus its status, as an
         * envelope's code would be, so that CODE= finds every refused request. */
        resp->facts.code = status >= 400 ? -(int) status : 0;
        resp->content_type = NULL;
        resp->body = NULL;
        resp->body_len = 0;
}

static int reply_text(ApiResponse *resp, unsigned status, const char *text) {
        char *body = strdup(text);

        if (!body)
                return -ENOMEM;
        reply_empty(resp, status);
        resp->content_type = CONTENT_TYPE_TEXT;
        resp->body = body;
        resp->body_len = strlen(body);
        return 0;
}

/* For helpers that answer on behalf of their caller: 1 once the answer is made, or the error. */
static int answered(int r) {
        return r < 0 ? r : 1;
}

int api_error(unsigned status, int code, const char *message, ApiResponse *ret) {
        return reply_error(ret, status, code, message);
}

/* ---- routing ---- */

static const ApiRoute *route_find(const char *method, const char *url, bool *ret_path_known) {
        *ret_path_known = false;
        for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
                if (!streq(routes[i].path, url))
                        continue;
                *ret_path_known = true;
                if (streq(routes[i].method, method))
                        return &routes[i];
        }
        return NULL;
}

/* Checks the key against the digest the worker holds instead of app.key (key-digest.h: the comparison
 * takes the same time wherever the digests differ). A missing header is an empty key, which no digest
 * matches (config_load() refuses an empty app.key). No digest: nothing is authorised (fail closed). */
static bool api_key_valid(const Config *cfg, const char *given) {
        return cfg->api_key_digest && key_digest_matches(cfg->api_key_digest, given ? given : "");
}

/* 0 when the request may go on to its handler; 1 with *resp set otherwise. */
static int route_check(Api *api, const ApiRequest *req, const ApiRoute **ret_route, ApiResponse *resp) {
        const ApiRoute *route;
        bool path_known;
        int r;

        route = route_find(req->method, req->url, &path_known);
        if (!route) {
                /* gin's answer to an unknown route, and to a known one with another method */
                r = reply_text(resp, 404, "404 page not found");
                return r < 0 ? r : 1;
        }
        resp->facts.route = route->path;
        if (route->auth && !api_key_valid(api->cfg, req->api_key)) {
                reply_empty(resp, 401);
                return 1;
        }
        /* A valid key proves the client whatever the route, /health included: it keeps its keep-alive. */
        resp->facts.authenticated = route->auth || api_key_valid(api->cfg, req->api_key);
        *ret_route = route;
        return 0;
}

int api_precheck(Api *api, const ApiRequest *req, ApiResponse *ret) {
        const ApiRoute *route;

        *ret = (ApiResponse){ 0 };
        return route_check(api, req, &route, ret);
}

int api_handle(Api *api, const ApiRequest *req, ApiResponse *ret) {
        const ApiRoute *route;
        int r;

        *ret = (ApiResponse){ 0 };
        r = route_check(api, req, &route, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = route->handler(api, req, ret);
        if (r == -ENOMEM)
                api_response_done(ret);
        return r;
}

/* ---- request bodies ---- */

/* json-c accepts 'single-quoted' strings even in strict mode; JSON (and upstream's Go decoder) does
 * not. A quote outside a string is never valid JSON. */
static bool has_bare_single_quote(const char *s, size_t len) {
        bool in_string = false;

        for (size_t i = 0; i < len; i++) {
                if (in_string) {
                        if (s[i] == '\\')
                                i++;
                        else if (s[i] == '"')
                                in_string = false;
                } else if (s[i] == '"')
                        in_string = true;
                else if (s[i] == '\'')
                        return true;
        }
        return false;
}

/* Parses a whole body as one JSON value: well-formed UTF-8, at most json-c's default depth (32),
 * nothing but whitespace after it. On a bad body returns -EBADMSG with *reterr_message (static). */
static int json_parse_body(const ApiRequest *req, json_object **ret, const char **reterr_message) {
        _cleanup_(json_tokener_freep) json_tokener *tok = NULL;
        _cleanup_(json_object_putp) json_object *o = NULL;
        const char *body = req->body ? req->body : "";
        size_t len = req->body ? req->body_len : 0;
        enum json_tokener_error e;

        if (len >= INT_MAX) {
                *reterr_message = "request body too large";
                return -EBADMSG;
        }
        if (!utf8_is_valid(body, len)) { /* strict: json-c's own check lets overlong forms through */
                *reterr_message = "request body is not valid UTF-8";
                return -EBADMSG;
        }
        if (has_bare_single_quote(body, len)) {
                *reterr_message = "request body is not valid JSON: unexpected character";
                return -EBADMSG;
        }

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        /* The terminating NUL tells json-c that the input ends (else "123" could go on as "1234"). */
        o = json_tokener_parse_ex(tok, body, (int) len + 1);
        e = json_tokener_get_error(tok);
        if (!o || e != json_tokener_success) {
                switch ((int) e) { /* a library's enum: default takes the rest */
                case json_tokener_error_parse_utf8_string:
                        *reterr_message = "request body is not valid UTF-8";
                        break;
                case json_tokener_error_depth:
                        *reterr_message = "request body is not valid JSON: nested too deeply";
                        break;
                case json_tokener_success: /* "null": a valid value, which is no object */
                        *reterr_message = "request body must be a JSON object";
                        break;
                case json_tokener_error_parse_eof:
                case json_tokener_continue:
                        *reterr_message = "request body is not valid JSON: unexpected end of data";
                        break;
                default:
                        *reterr_message = "request body is not valid JSON: unexpected character";
                }
                return -EBADMSG;
        }
        if (json_tokener_get_parse_end(tok) < len) {
                *reterr_message = "request body is not valid JSON: unexpected data after the value";
                return -EBADMSG;
        }
        if (!json_object_is_type(o, json_type_object)) {
                *reterr_message = "request body must be a JSON object";
                return -EBADMSG;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* 0 with the string (which may be empty), -ENOENT when absent or null (null binds to "" in upstream's
 * Go), -EINVAL when of another type. */
static int json_field_string(json_object *o, const char *key, const char **ret, size_t *ret_len) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) || !v)
                return -ENOENT;
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        *ret = json_object_get_string(v);
        *ret_len = (size_t) json_object_get_string_len(v);
        return 0;
}

static int json_field_bool(json_object *o, const char *key, bool *ret) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) || !v)
                return -ENOENT;
        if (!json_object_is_type(v, json_type_boolean))
                return -EINVAL;
        *ret = json_object_get_boolean(v);
        return 0;
}

typedef struct RunParams {
        const char *language, *code, *preload;
        size_t language_len, code_len, preload_len;
        bool network;
} RunParams;

/* Binds the body of a run; on a bad body answers 400 and returns 1. */
static int run_params_bind(json_object *body, RunParams *p, ApiResponse *resp) {
        int r;

        r = json_field_string(body, "language", &p->language, &p->language_len);
        if (r == -EINVAL)
                return answered(reply_error(resp, 400, -400, "language must be a string"));
        if (r < 0 || p->language_len == 0)
                return answered(reply_error(resp, 400, -400, "language is required"));

        r = json_field_string(body, "code", &p->code, &p->code_len);
        if (r == -EINVAL)
                return answered(reply_error(resp, 400, -400, "code must be a string"));
        if (r < 0 || p->code_len == 0)
                return answered(reply_error(resp, 400, -400, "code is required"));

        r = json_field_string(body, "preload", &p->preload, &p->preload_len);
        if (r == -EINVAL)
                return answered(reply_error(resp, 400, -400, "preload must be a string"));
        if (r < 0) {
                p->preload = "";
                p->preload_len = 0;
        }

        r = json_field_bool(body, "enable_network", &p->network);
        if (r == -EINVAL)
                return answered(reply_error(resp, 400, -400, "enable_network must be a boolean"));
        if (r < 0)
                p->network = false;
        return 0;
}

int api_run_body_check(const char *body, size_t len, ApiResponse *resp) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        ApiRequest req = { .method = "POST", .url = "/v1/sandbox/run", .body = body, .body_len = len };
        RunParams p = { 0 };
        const char *why;
        int r;

        r = json_parse_body(&req, &o, &why);
        if (r == -EBADMSG)
                return answered(reply_error(resp, 400, -400, why));
        if (r < 0)
                return r;
        r = run_params_bind(o, &p, resp);
        if (r != 0)
                return r;
        if (strlen(p.language) != p.language_len || language_from_string(p.language) < 0)
                return answered(reply_error(resp, 400, -400, "unsupported language"));
        return 0;
}

/* ---- /health ---- */

static int api_handle_health(Api *api, const ApiRequest *req, ApiResponse *resp) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_string("ok");

        if (!o)
                return -ENOMEM;
        return reply_json(resp, 200, o);
}

/* ---- /v1/sandbox/run ---- */

/* The code the sandbox runs: with enable_preload, preload then code in one program, so that preload
 * runs inside the sandbox like the rest (DESIGN §1); otherwise code alone and preload is ignored. */
static int run_code_assemble(const Config *cfg, const RunParams *p, char **ret, size_t *ret_len) {
        bool preload = cfg->enable_preload && p->preload_len > 0;
        size_t len = p->code_len + (preload ? p->preload_len + 1 : 0);
        char *code;

        code = malloc(len + 1);
        if (!code)
                return -ENOMEM;
        if (preload) {
                memcpy(code, p->preload, p->preload_len);
                code[p->preload_len] = '\n';
                memcpy(code + p->preload_len + 1, p->code, p->code_len);
        } else
                memcpy(code, p->code, p->code_len);
        code[len] = '\0';
        *ret = code;
        *ret_len = len;
        return 0;
}

/* The run's answer, streamed (answer.h): its outputs move into it, and the error is cut to stderr's
 * tail there, so nothing but the two outputs stays in memory until the client has read it. */
static int reply_run_answer(ApiResponse *resp, RunnerResult *res) {
        const RunnerReply *reply = &res->reply;
        Answer *answer = NULL;
        int r;

        r = answer_new_run(TAKE_PTR(res->parts[RUNNER_PART_STDOUT]), reply->part_len[RUNNER_PART_STDOUT],
                           TAKE_PTR(res->parts[RUNNER_PART_STDERR]), reply->part_len[RUNNER_PART_STDERR],
                           res->parts[RUNNER_PART_ERROR], reply->part_len[RUNNER_PART_ERROR],
                           reply->exit_code, &answer);
        if (r < 0)
                return r;
        runner_result_done(res); /* the error's whole text too, before the answer waits for its client */
        free(resp->body);
        answer_free(resp->answer);
        resp->status = 200;
        resp->content_type = CONTENT_TYPE_JSON;
        resp->body = NULL;
        resp->body_len = 0;
        resp->answer = answer;
        resp->facts.code = 0;
        return 0;
}

/* How long a worker waits for the runner's answer: the longest a queued run can take, plus a margin for
 * setting up and cleaning up. The runner bounds each of these; this only keeps a worker from waiting for
 * ever on a runner that broke. */
static uint64_t run_answer_timeout_usec(const Config *cfg) {
        return admit_wait_usec(cfg) + cfg->worker_timeout_usec + RUN_ANSWER_MARGIN_USEC;
}

/* -500 naming the runner, when it could not be asked or did not answer. */
static int reply_runner_unreachable(Api *api, ApiResponse *resp, int error, RunnerClientStage stage) {
        const char *path = runner_client_socket_path(api->runner);
        const char *what = stage == RUNNER_CLIENT_CONNECT ? "cannot reach the runner"
                           : stage == RUNNER_CLIENT_ASK   ? "cannot send the run to the runner"
                                                          : "the runner ended the run without an answer";

        log_error_errno(error, "%s%s%s%s: %m", what, path ? " at '" : "", path ? path : "", path ? "'" : "");
        return reply_errorf(resp, 200, -500, "%s (difysandbox-runner%s%s): %s", what, path ? ", " : "",
                            path ? path : "", strerror(-error));
}

/* -500 with the step, the error and the detail, so an operator knows what to fix. The runner logged it. */
static int reply_sandbox_failure(ApiResponse *resp, const RunnerResult *res) {
        const char *step =
                res->reply.part_len[RUNNER_PART_STEP] > 0 ? res->parts[RUNNER_PART_STEP] : "unknown";
        const char *detail =
                res->reply.part_len[RUNNER_PART_DETAIL] > 0 ? res->parts[RUNNER_PART_DETAIL] : NULL;

        return reply_errorf(resp, 200, -500, "sandbox failed at step '%s': %s%s%s%s", step,
                            strerror(-res->reply.error), detail ? " (" : "", detail ? detail : "",
                            detail ? ")" : "");
}

static void run_facts(const RunnerResult *res, ApiFacts *facts) {
        const RunnerReply *reply = &res->reply;

        facts->ran = true;
        (void) snprintf(facts->run_id, sizeof(facts->run_id), "%s", reply->run_id);
        facts->result = run_result_to_string((RunResult) reply->result);
        facts->exit_code = reply->exit_code;
        facts->run_usec = reply->duration_usec;
        facts->cpu_usec = reply->cpu_usec;
        facts->memory_peak = reply->memory_peak;
        facts->uid = reply->uid;
        facts->stdout_bytes = reply->part_len[RUNNER_PART_STDOUT];
        facts->stderr_bytes = reply->part_len[RUNNER_PART_STDERR];
        facts->queued_usec = reply->queued_usec;
        facts->worker_slot = reply->worker_slot;
}

/* The runner's answer as the API's. */
static int reply_run(ApiResponse *resp, RunnerResult *res) {
        switch (res->reply.status) {
        case RUNNER_STATUS_RAN:
                if (!run_result_to_string((RunResult) res->reply.result))
                        return reply_errorf(resp, 200, -500,
                                            "the runner answered an unknown result %" PRIu32,
                                            res->reply.result);
                run_facts(res, &resp->facts);
                return reply_run_answer(resp, res);
        case RUNNER_STATUS_BUSY:
        case RUNNER_STATUS_TIMEOUT:
                /* Overload either way, answered alike so that clients and balancers retry it alike. */
                return reply_error(resp, 503, -503, "Too many requests");
        case RUNNER_STATUS_FAILED:
                return reply_sandbox_failure(resp, res);
        case RUNNER_STATUS_CONFIG:
        case _RUNNER_STATUS_MAX:
                break;
        }
        return reply_errorf(resp, 200, -500, "the runner answered a run with status %u",
                            (unsigned) res->reply.status);
}

static int api_handle_run(Api *api, const ApiRequest *req, ApiResponse *resp) {
        const Config *cfg = api->cfg;
        _cleanup_(json_object_putp) json_object *body = NULL;
        _cleanup_(runner_result_done) RunnerResult res = { 0 };
        _cleanup_free_ char *code = NULL;
        RunnerClientStage stage;
        const char *why;
        RunParams p = { 0 };
        Language language;
        size_t code_len;
        int r;

        r = json_parse_body(req, &body, &why);
        if (r == -EBADMSG)
                return reply_error(resp, 400, -400, why);
        if (r < 0)
                return r;
        r = run_params_bind(body, &p, resp);
        if (r != 0)
                return r < 0 ? r : 0;

        /* The JSON string may hold "\u0000": "python3\u0000x" is not python3. */
        language =
                strlen(p.language) == p.language_len ? language_from_string(p.language) : _LANGUAGE_INVALID;
        if (language < 0)
                return reply_error(resp, 400, -400, "unsupported language");
        resp->facts.language = language_to_string(language);
        if (p.network && !cfg->enable_network)
                return reply_error(resp, 200, -400,
                                   "network is disabled, please enable it in the configuration");

        r = run_code_assemble(cfg, &p, &code, &code_len);
        if (r < 0)
                return r;
        resp->facts.code_bytes = code_len;
        if (code_len > cfg->code_max)
                return reply_errorf(resp, 400, -400, "code is longer than code_max (%" PRIu64 " bytes)",
                                    cfg->code_max);

        /* Which prepared run fits: one with the preloads imported for code that imports them, a light one
         * for the rest (preload-match.h). */
        bool wants_preload =
                code_names_module(code, code_len, runtime_pool_preload(runtime_get(language), cfg));
        r = runner_client_run(api->runner, (uint32_t) language, p.network, wants_preload, code, code_len,
                              run_answer_timeout_usec(cfg), &res, &stage);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_runner_unreachable(api, resp, r, stage);
        return reply_run(resp, &res);
}

/* ---- /v1/sandbox/dependencies ---- */

/* [{name, version}]: what a run can import (packages.h), as upstream lists it. */
static int dependencies_list(const Config *cfg, Language language, json_object **ret, char **reterr_path) {
        _cleanup_(json_object_putp) json_object *list = NULL;
        Package *packages = NULL;
        size_t n = 0;
        int r;

        r = packages_list(cfg->runtime_dir, language_to_string(language), &packages, &n, reterr_path);
        if (r < 0)
                return r;
        list = json_object_new_array();
        r = list ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_(json_object_putp) json_object *dep = json_object_new_object();

                if (!dep ||
                    json_add_string_utf8(dep, "name", packages[i].name, strlen(packages[i].name)) < 0 ||
                    json_add_string_utf8(dep, "version", packages[i].version, strlen(packages[i].version)) <
                            0 ||
                    json_object_array_add(list, dep) < 0)
                        r = -ENOMEM;
                else
                        (void) TAKE_PTR(dep);
        }
        packages_free(packages, n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(list);
        return 0;
}

static int api_handle_dependencies(Api *api, const ApiRequest *req, ApiResponse *resp) {
        _cleanup_(json_object_putp) json_object *list = NULL, *data = NULL;
        _cleanup_free_ char *path = NULL;
        Language language;
        int r;

        if (!req->language || !*req->language)
                return reply_error(resp, 400, -400, "language is required");
        language = language_from_string(req->language);
        if (language < 0)
                return reply_error(resp, 400, -400, "unsupported language");
        resp->facts.language = language_to_string(language);

        r = dependencies_list(api->cfg, language, &list, &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error_errno(r, "Cannot read the dependency list '%s': %m", path);
                return reply_errorf(resp, 200, -500, "cannot read the dependency list %s: %s", path,
                                    r == -EBADMSG ? "malformed metadata" : strerror(-r));
        }

        data = json_object_new_object();
        if (!data || json_object_object_add(data, "dependencies", TAKE_PTR(list)) < 0)
                return -ENOMEM;
        return reply_envelope(resp, 200, 0, "success", TAKE_PTR(data));
}

/* ---- /v1/sandbox/dependencies/update and /refresh ---- */

/* Both ask difysandbox-manager for a new dependency generation of ?language= (or {"language"} in the
 * body; python3 when neither says): the requirement file and the packages installed before, reinstalled
 * (DESIGN §4). The answer comes when the new generation is current, or with why it is not; the current
 * one keeps serving either way. Runs never need the manager; these two routes do. */
static int dependencies_rebuild(Api *api, const ApiRequest *req, ApiResponse *resp) {
        _cleanup_(json_object_putp) json_object *body = NULL;
        _cleanup_free_ char *error = NULL;
        const char *name = req->language, *why;
        Language language;
        size_t name_len;
        uint64_t start;
        int r;

        if (!name && req->body_len > 0) {
                r = json_parse_body(req, &body, &why);
                if (r == -EBADMSG)
                        return reply_error(resp, 400, -400, why);
                if (r < 0)
                        return r;
                r = json_field_string(body, "language", &name, &name_len);
                if (r == -EINVAL)
                        return reply_error(resp, 400, -400, "language must be a string");
        }
        if (!name || !*name)
                name = "python3";
        language = language_from_string(name);
        if (language < 0)
                return reply_error(resp, 400, -400, "unsupported language");
        resp->facts.language = language_to_string(language);

        start = now(CLOCK_MONOTONIC);
        r = manager_refresh_dependencies(language_to_string(language), DEPENDENCY_JOB_TIMEOUT_USEC, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error("Refreshing the %s dependencies failed: %s", name, error ? error : strerror(-r));
                if (error)
                        return reply_error(resp, 200, -500, error);
                return reply_errorf(resp, 200, -500, "refreshing the %s dependencies failed: %s", name,
                                    strerror(-r));
        }
        log_info("A new %s dependency generation is current, after %" PRIu64 " ms", name,
                 (now(CLOCK_MONOTONIC) - start) / 1000);
        return reply_envelope(resp, 200, 0, "success", NULL);
}

static int api_handle_dependencies_update(Api *api, const ApiRequest *req, ApiResponse *resp) {
        return dependencies_rebuild(api, req, resp);
}

static int api_handle_dependencies_refresh(Api *api, const ApiRequest *req, ApiResponse *resp) {
        return dependencies_rebuild(api, req, resp);
}
