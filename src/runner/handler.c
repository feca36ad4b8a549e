/* handler: see handler.h. */

#include "handler.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "runtime/runtime.h"
#include "sandbox/run.h"

DEFINE_POINTER_CLEANUP(AdmitTicket *, admit_release);
DEFINE_POINTER_CLEANUP(PreparedRun *, prepared_run_free);

static int reply_send(int conn_fd, const RunnerReply *reply, const void *const *parts) {
        _cleanup_close_ int payload = -EBADF;
        RunnerReplyWire wire;
        int r;

        if (runner_reply_payload_size(reply) > 0) {
                r = payload_new(parts, reply->part_len, _RUNNER_PART_MAX, &payload);
                if (r < 0)
                        return r;
        }
        runner_reply_encode(reply, &wire);
        return runner_send(conn_fd, &wire, sizeof(wire), payload);
}

int handler_reply_status(int conn_fd, RunnerStatus status, int error, RunStep step, const char *detail,
                         uint64_t config_generation) {
        const char *step_name = run_step_to_string(step);
        RunnerReply reply = {
                .status = status,
                .error = status == RUNNER_STATUS_FAILED ? (error < 0 ? error : -EIO) : 0,
                .config_generation = config_generation,
        };
        const void *parts[_RUNNER_PART_MAX] = { 0 };

        if (step_name) {
                parts[RUNNER_PART_STEP] = step_name;
                reply.part_len[RUNNER_PART_STEP] = strlen(step_name);
        }
        if (detail) {
                parts[RUNNER_PART_DETAIL] = detail;
                reply.part_len[RUNNER_PART_DETAIL] = strlen(detail);
        }
        return reply_send(conn_fd, &reply, parts);
}

int handler_config(const HandlerContext *ctx, int conn_fd) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        /* The worker's view: a digest of app.key, no password of an index or a proxy (issue 43). */
        r = config_format_for_worker(ctx->cfg, f);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return handler_reply_status(conn_fd, RUNNER_STATUS_FAILED, r, RUN_STEP_CONFIG, NULL,
                                            ctx->config_generation);

        RunnerReply reply = { .status = RUNNER_STATUS_CONFIG, .config_generation = ctx->config_generation };
        const void *parts[_RUNNER_PART_MAX] = { [RUNNER_PART_CONFIG] = text };
        reply.part_len[RUNNER_PART_CONFIG] = len;
        return reply_send(conn_fd, &reply, parts);
}

/* Takes a request slot and a worker slot. 0 with *ret set, or the status that refuses the run: BUSY or
 * TIMEOUT (counted as rejected), FAILED (the admission state cannot be used; *ret_error says why). */
static RunnerStatus admit(const HandlerContext *ctx, Language language, AdmitTicket **ret, int *ret_error) {
        const Config *cfg = ctx->cfg;
        uint64_t wait = admit_wait_usec(cfg);
        int r;

        r = admit_take(ctx->admit, wait, ret);
        if (r >= 0)
                return RUNNER_STATUS_RAN;
        if (r == -EBUSY || r == -ETIMEDOUT) {
                if (r == -EBUSY)
                        log_warning("Refusing a run: %" PRIu32 " requests (max_requests) are in flight",
                                    cfg->max_requests);
                else
                        log_warning("Refusing a run: no worker slot (max_workers=%" PRIu32
                                    ") came free within %" PRIu64 " s",
                                    cfg->max_workers, wait / USEC_PER_SEC);
                stats_record_rejected(ctx->stats, (unsigned) language);
                if (r == -EBUSY)
                        stats_record_refused_max_requests(ctx->stats, (unsigned) language);
                return r == -EBUSY ? RUNNER_STATUS_BUSY : RUNNER_STATUS_TIMEOUT;
        }
        log_error_errno(r, "Cannot take an admission slot in '%s/admission': %m", cfg->state_dir);
        *ret_error = r;
        return RUNNER_STATUS_FAILED;
}

/* The run itself: the prepared one if it still fits, else one made now. A prepared run that died
 * before reading its code ran nothing of the user's, so a fresh run is safe; any other failure may have
 * run some of the code, and is reported, never repeated. *ret_warm says which of them ran the code (a
 * pool hit), also when it failed. */
static int run(const HandlerContext *ctx, const RunRequest *req, PreparedRun *warm, RunOutput *out,
               RunFailure *failure, bool *ret_warm) {
        _cleanup_(prepared_run_freep) PreparedRun *p = warm;
        int r;

        *ret_warm = false;
        if (p && prepared_run_matches(ctx->sandbox, p, req)) {
                r = prepared_run_execute(ctx->sandbox, TAKE_PTR(p), req->code, req->code_len, 0, out,
                                         failure);
                *ret_warm = r >= 0 || !failure->before_code;
                if (*ret_warm)
                        return r;
                log_debug_errno(r, "Prepared run failed at '%s', running afresh: %m",
                                run_step_to_string(failure->step));
                run_failure_done(failure);
        }
        p = prepared_run_free(p);
        return sandbox_run(ctx->sandbox, req, out, failure);
}

static int reply_ran(const HandlerContext *ctx, int conn_fd, const RunOutput *out, uint64_t queued_usec,
                     unsigned worker_slot) {
        RunnerReply reply = {
                .status = RUNNER_STATUS_RAN,
                .result = (uint32_t) out->result,
                .exit_code = out->exit_code,
                .warm = out->warm,
                .stdout_truncated = out->stdout_truncated,
                .stderr_truncated = out->stderr_truncated,
                .uid = (uint32_t) out->uid,
                .egress_denials = out->egress_denials,
                .worker_slot = worker_slot,
                .duration_usec = out->duration_usec,
                .cpu_usec = out->cpu_usec,
                .memory_peak = out->memory_peak,
                .queued_usec = queued_usec,
                .config_generation = ctx->config_generation,
        };
        const void *parts[_RUNNER_PART_MAX] = {
                [RUNNER_PART_STDOUT] = out->stdout_text,
                [RUNNER_PART_STDERR] = out->stderr_text,
                [RUNNER_PART_ERROR] = out->error,
        };

        (void) snprintf(reply.run_id, sizeof(reply.run_id), "%s", out->id);
        reply.part_len[RUNNER_PART_STDOUT] = out->stdout_len;
        reply.part_len[RUNNER_PART_STDERR] = out->stderr_len;
        reply.part_len[RUNNER_PART_ERROR] = out->error ? strlen(out->error) : 0;
        return reply_send(conn_fd, &reply, parts);
}

void handler_result_done(HandlerResult *res) {
        run_output_done(&res->out);
        run_failure_done(&res->failure);
}

int handler_execute(const HandlerContext *ctx, const RunRequest *req, PreparedRun *warm,
                    HandlerResult *ret) {
        _cleanup_(prepared_run_freep) PreparedRun *p = warm;
        _cleanup_(admit_releasep) AdmitTicket *ticket = NULL;
        uint64_t start = now(CLOCK_MONOTONIC);
        bool warm_ran;
        int active_slot, r;

        *ret = (HandlerResult){ .status = RUNNER_STATUS_FAILED };
        ret->status = admit(ctx, (Language) req->language, &ticket, &ret->error);
        if (ret->status != RUNNER_STATUS_RAN) {
                if (ret->status == RUNNER_STATUS_FAILED)
                        ret->failure = (RunFailure){ .step = RUN_STEP_ADMISSION,
                                                     .error = ret->error,
                                                     .detail = strdup(ctx->cfg->state_dir) };
                return 0;
        }
        ret->queued_usec = admit_ticket_waited_usec(ticket);
        stats_record_admission_wait(ctx->stats, (unsigned) req->language, ret->queued_usec);
        ret->worker_slot = admit_ticket_worker_slot(ticket);

        active_slot = stats_run_begin(ctx->stats);
        r = run(ctx, req, TAKE_PTR(p), &ret->out, &ret->failure, &warm_ran);
        ticket = admit_release(ticket); /* the slots go as soon as the run is over, not with the reply */
        stats_run_end(ctx->stats, active_slot);
        stats_record_pool(ctx->stats, (unsigned) req->language, warm_ran);
        if (r < 0) {
                /* The user sees an error: counted as one, with the time it took to fail. */
                stats_record_run(ctx->stats, (unsigned) req->language, STATS_RESULT_ERROR,
                                 now(CLOCK_MONOTONIC) - start);
                const char *step = run_step_to_string(ret->failure.step);
                log_error_errno(
                        r, "Sandbox failed at step '%s'%s%s%s: %m", step, ret->failure.detail ? " ('" : "",
                        ret->failure.detail ? ret->failure.detail : "", ret->failure.detail ? "')" : "");
                ret->status = RUNNER_STATUS_FAILED;
                ret->error = r;
                return 0;
        }

        stats_record_run(ctx->stats, (unsigned) req->language, stats_result_from_run(ret->out.result),
                         ret->out.duration_usec);
        stats_add_egress_denials(ctx->stats, ret->out.egress_denials);
        const Refusals *refused = &ret->out.refusals;
        for (unsigned i = 0; i < refused->n; i++)
                stats_record_refusal(ctx->stats, (unsigned) req->language, (unsigned) refused->calls[i].nr,
                                     refused->calls[i].count);
        char syscall[64], refused_list[512];
        refusals_describe(refused, syscall, sizeof(syscall), refused_list, sizeof(refused_list));
        RunRecord record;
        run_output_record(&ret->out, language_to_string((Language) req->language), &record);
        record.syscall = syscall[0] ? syscall : NULL;
        record.refused_syscalls = refused_list[0] ? refused_list : NULL;
        record.refused_total = refused->total;
        log_run_record(&record);
        ret->status = RUNNER_STATUS_RAN;
        return 0;
}

int handler_run(const HandlerContext *ctx, const RunnerRequest *req, int code_fd, PreparedRun *warm,
                int conn_fd) {
        _cleanup_(prepared_run_freep) PreparedRun *p = warm;
        _cleanup_free_ char *code = NULL;
        HandlerResult res;
        int r;

        r = payload_read(code_fd, 0, req->code_len, &code);
        if (r < 0)
                return handler_reply_status(conn_fd, RUNNER_STATUS_FAILED, r, RUN_STEP_REQUEST, NULL,
                                            ctx->config_generation);

        RunRequest run_req = {
                .language = req->language, .code = code, .code_len = req->code_len, .network = req->network
        };
        (void) handler_execute(ctx, &run_req, TAKE_PTR(p), &res);
        if (res.status == RUNNER_STATUS_RAN)
                r = reply_ran(ctx, conn_fd, &res.out, res.queued_usec, res.worker_slot);
        else
                r = handler_reply_status(conn_fd, res.status, res.error, res.failure.step,
                                         res.failure.detail, ctx->config_generation);
        handler_result_done(&res);
        return r;
}
