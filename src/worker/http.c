/* http: see http.h.
 *
 * libmicrohttpd runs without a listening socket and without threads: MHD_add_connection() hands it the
 * accepted socket and this file's loop drives it (MHD_run_wait() and MHD_get_timeout()), so API
 * handlers and the sandbox's children all belong to the main thread. journal-gatewayd forces
 * MHD_USE_ITC because without it libmicrohttpd shuts down a listening socket to wake its threads, which
 * would break the socket systemd shares with it; here there is neither a listening socket nor a thread
 * to wake, so it is not needed.
 *
 * Limits, because the client may be hostile:
 *   - the request line: it must be complete within 2 s of a connection's start, and of the first byte of
 *     each later request (bytes a client sent after a request count from that request's answer); else the
 *     connection ends, with a 400 if any byte came. A flood of connections that send nothing or part of a
 *     line holds each worker 2 s, not the 30 s idle timeout;
 *   - headers: 64 KiB, answered 431 in Dify's envelope; the URL 8 KiB (414). libmicrohttpd's own buffer
 *     (MHD_OPTION_CONNECTION_MEMORY_LIMIT) is four times that: beyond it, and for what it refuses before
 *     calling us (a malformed request line, an unsupported HTTP version), its own HTML answers remain;
 *   - a request with two Content-Length headers, or Content-Length and Transfer-Encoding, is refused
 *     (400): which length would count is how requests are smuggled past proxies;
 *   - body: api_body_max() (code_max + 64 KiB); beyond it 413 with the -400 envelope, before reading a
 *     byte when Content-Length says so. The body is then read and dropped after the answer (a lingering
 *     close, as Apache's lingering_close()), up to linger_max() bytes and LINGER_USEC: a client that
 *     writes its whole body before reading (Dify's requests does) would otherwise have its write fail
 *     with EPIPE/ECONNRESET, since closing a socket with unread data makes the kernel send RST;
 *   - idle: 30 s without a byte between requests closes the connection (MHD_OPTION_CONNECTION_TIMEOUT,
 *     which counts inactivity only);
 *   - unauthenticated keep-alive: only a request with a valid X-Api-Key resets the idle timer
 *     (trusted_until). A connection that has made none (GET /health needs none; a wrong key is none)
 *     ends when idle TRUST_USEC after its start, however often it asks; one that has, TRUST_USEC after
 *     its last such request (Dify's pooled connections, whose requests all carry the key, see no
 *     change). Without this a client that asked for /health every 10 s held its worker for ever, and a
 *     few peers held every worker. Not shorter than the idle timeout: a flood reconnects at once when
 *     closed, and under systemd every new connection is an instance that costs PID 1 tens of
 *     milliseconds of CPU, so a short budget turns a flood that holds workers into one that burns the
 *     host's CPU (5 s did: a legitimate client then waited 7-10 s behind the flood's instances).
 *     One that starts under pressure (below) gets no keep-alive until it authenticates: its answer
 *     says "Connection: close". Asking idle connections to make room happens only when a new one
 *     starts, and at the limit none can (systemd refuses past MaxConnections=, serve stops accepting),
 *     so without this a burst that filled every slot before its first connections went idle would hold
 *     them all for the idle timeout. A worker that cannot count the connections (no slot) cannot tell
 *     pressure, so it assumes it;
 *   - pressure: when three quarters of the host's connections are live (connslot.h counts them), each new
 *     one asks enough idle unauthenticated connections to close to bring the count back below that, and
 *     they do at once. Authenticated
 *     connections are never asked, nor one that has not yet sent its first request;
 *   - slow requests: a request whose line, headers and body are not all in within 10 s of its first
 *     byte is dropped, however steadily it trickles in; an answer not taken by the client within 60 s
 *     likewise. The loop tracks the phase of the connection's one request to enforce this. */

#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/tcp.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <systemd/sd-journal.h>

#include "answer.h"
#include "api.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "connslot.h"
#include "runner-client.h"

#define HEADERS_MAX (64U * 1024U)
#define URL_MAX (8U * 1024U)
#define MHD_MEMORY \
        (4U * HEADERS_MAX) /* libmicrohttpd's buffer: room to refuse beyond our limits ourselves */
#define FIRST_LINE_USEC (UINT64_C(2) * USEC_PER_SEC)
#define IDLE_TIMEOUT_SEC 30U
/* The idle timer, which only a request with a valid X-Api-Key resets: a connection that has made none is
 * closed this long after its start, when idle, however often it asks for /health. See "Unauthenticated
 * keep-alive" above. */
#define TRUST_USEC ((uint64_t) IDLE_TIMEOUT_SEC * USEC_PER_SEC)
#define RECEIVE_TIMEOUT_USEC (UINT64_C(10) * USEC_PER_SEC)
#define SEND_TIMEOUT_USEC (UINT64_C(60) * USEC_PER_SEC)
/* A lingering close drops what the client still sends for at most this long in all, and gives up after
 * LINGER_QUIET_MSEC without a byte; it drops at most linger_max() bytes. */
#define LINGER_USEC (UINT64_C(10) * USEC_PER_SEC)
#define LINGER_QUIET_MSEC 2000
#define LINGER_BYTES_MIN (UINT64_C(64) << 20)
/* The buffer a streamed answer is made into: its only copy in memory. */
#define ANSWER_BLOCK (64U * 1024U)
/* MESSAGE_ID of the per-request record (catalog/difysandbox.catalog). */
#define MESSAGE_REQUEST_FINISHED_STR "afb7818a1c774a8ab23a8cdfef9b6260"
/* "[" IPv6 "]:" port, or a Unix socket path shortened to fit */
#define PEER_MAX (INET6_ADDRSTRLEN + 2 + 1 + 5 + 1)

DEFINE_POINTER_CLEANUP(struct MHD_Response *, MHD_destroy_response);
DEFINE_POINTER_CLEANUP(struct MHD_Daemon *, MHD_stop_daemon);
DEFINE_POINTER_CLEANUP(Api *, api_free);

typedef enum Phase {
        PHASE_IDLE,       /* between requests: only the idle timeout applies */
        PHASE_RECEIVING,  /* since the first byte of a request: RECEIVE_TIMEOUT_USEC */
        PHASE_PROCESSING, /* the handler runs (inside MHD_run_wait()): admission and the run bound it */
        PHASE_SENDING,    /* the answer is queued: SEND_TIMEOUT_USEC */
} Phase;

/* The connection's current request; there is one at a time, so it lives in Http and is reset when the
 * next one starts. libmicrohttpd's per-request pointer points here. */
typedef struct Request {
        bool started;      /* the request line was seen (a record will be written) */
        bool headers_seen; /* the handler ran its first call */
        bool too_large;
        bool chunked;          /* its body's framing is not counted: see Http.accounting */
        uint64_t framed_bytes; /* request line, headers and Content-Length body */
        uint64_t start_usec;
        unsigned number; /* on this connection, from 1 */
        char method[16]; /* for the record; longer methods are cut, no route has one */
        char *body;
        size_t body_len, body_alloc;
        ApiResponse resp;
} Request;

typedef struct Http {
        const Config *cfg;
        Config *reloaded_cfg; /* owned: the configuration loaded after a reload, or NULL */
        bool reloadable;
        RunnerClient *runner; /* not owned: where runs and the configuration come from */
        Api *api;
        int fd;      /* the connection; libmicrohttpd owns it, the loop only polls it while idle */
        bool open;   /* handed to libmicrohttpd and not yet closed by it: see connection_notified() */
        bool linger; /* an answer was sent with a body left unread: drop the rest before closing */
        char peer[PEER_MAX];
        size_t body_max;
        Phase phase;
        uint64_t phase_start;
        uint64_t line_deadline; /* CLOCK_MONOTONIC usec by which a request line must be in; 0: none */
        bool line_bytes;        /* a byte of the awaited request line came (then a 400 is owed) */
        /* Bytes that libmicrohttpd read for completed requests, to see bytes it read beyond them (the
         * start of another request, or junk). Off for a Unix socket or after a chunked body. */
        bool accounting;
        uint64_t accounted;
        unsigned n_requests;
        /* See "Unauthenticated keep-alive" above. */
        ConnSlot *slot;         /* not owned: this connection's place in the host-wide count, or NULL */
        bool authenticated;     /* a request with a valid key was answered */
        uint64_t trusted_until; /* CLOCK_MONOTONIC usec: once idle past it, the connection ends */
        const char *refusal;    /* when set, every request is answered 503 with it, and the end */
        Request req;
} Http;

static void phase_enter(Http *h, Phase phase) {
        h->phase = phase;
        h->phase_start = now(CLOCK_MONOTONIC);
}

static void request_reset(Request *rq) {
        free(rq->body);
        api_response_done(&rq->resp);
        *rq = (Request){ 0 };
}

static void peer_format(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t size) {
        char addr[INET6_ADDRSTRLEN];

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) ss;
                if (inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr)))
                        (void) snprintf(buf, size, "%s:%u", addr, (unsigned) ntohs(in->sin_port));
                return;
        }
        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) ss;
                if (inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr)))
                        (void) snprintf(buf, size, "[%s]:%u", addr, (unsigned) ntohs(in6->sin6_port));
                return;
        }
        (void) snprintf(buf, size, "%s", ss->ss_family == AF_UNIX ? "unix" : "unknown");
}

static const char *termination_to_string(enum MHD_RequestTerminationCode toe) {
        switch (toe) {
        case MHD_REQUEST_TERMINATED_COMPLETED_OK:
                return "completed";
        case MHD_REQUEST_TERMINATED_WITH_ERROR:
                return "error";
        case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
                return "timeout";
        case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
                return "dropped";
        case MHD_REQUEST_TERMINATED_READ_ERROR:
                return "read-error";
        case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
                return "client-abort";
        }
        return "unknown";
}

static usec_t process_start_usec; /* 0: not noted */

void http_note_process_start(void) {
        process_start_usec = now(CLOCK_MONOTONIC);
}

/* The request's journal record: typed fields an operator can query, never code or output (only their
 * sizes). Without journald, one line on stderr with the same facts. */
static void request_log(const Http *h, const Request *rq, unsigned status,
                        enum MHD_RequestTerminationCode toe) {
        const ApiFacts *f = &rq->resp.facts;
        const char *route = f->route ? f->route : "unknown", *term = termination_to_string(toe);
        uint64_t duration = now(CLOCK_MONOTONIC) - rq->start_usec;

        if (log_use_journal()) { /* where the other lines of the worker go */
                if (f->ran)
                        (void) sd_journal_send(
                                "MESSAGE=%s %s: %u, code %i, %s in %" PRIu64 " ms", rq->method, route,
                                status, f->code, f->result, duration / USEC_PER_MSEC,
                                "MESSAGE_ID=" MESSAGE_REQUEST_FINISHED_STR, "PRIORITY=%i", LOG_INFO,
                                "METHOD=%s", rq->method, "ROUTE=%s", route, "STATUS=%u", status, "CODE=%i",
                                f->code, "DURATION_USEC=%" PRIu64, duration, "PEER=%s", h->peer,
                                "REQUEST=%u", rq->number, "TERMINATION=%s", term, "DIFYSANDBOX_RUN_ID=%s",
                                f->run_id, "LANGUAGE=%s", f->language, "RESULT=%s", f->result,
                                "EXIT_CODE=%i", f->exit_code, "RUN_DURATION_USEC=%" PRIu64, f->run_usec,
                                "REQUEST_START_USEC=%" PRIu64, rq->start_usec, "PROCESS_START_USEC=%" PRIu64,
                                process_start_usec, "CPU_USEC=%" PRIu64, f->cpu_usec, "MEMORY_PEAK=%" PRIu64,
                                f->memory_peak, "UID=%" PRIu32, f->uid, "QUEUED_USEC=%" PRIu64,
                                f->queued_usec, "WORKER_SLOT=%u", f->worker_slot, "CODE_BYTES=%zu",
                                f->code_bytes, "STDOUT_BYTES=%zu", f->stdout_bytes, "STDERR_BYTES=%zu",
                                f->stderr_bytes, NULL);
                else
                        (void) sd_journal_send("MESSAGE=%s %s: %u, code %i", rq->method, route, status,
                                               f->code, "MESSAGE_ID=" MESSAGE_REQUEST_FINISHED_STR,
                                               "PRIORITY=%i", LOG_INFO, "METHOD=%s", rq->method, "ROUTE=%s",
                                               route, "STATUS=%u", status, "CODE=%i", f->code,
                                               "DURATION_USEC=%" PRIu64, duration, "PEER=%s", h->peer,
                                               "REQUEST=%u", rq->number, "TERMINATION=%s", term, NULL);
                return;
        }

        if (f->ran)
                log_info("METHOD=%s ROUTE=%s STATUS=%u CODE=%i DURATION_USEC=%" PRIu64 " PEER=%s REQUEST=%u "
                         "TERMINATION=%s DIFYSANDBOX_RUN_ID=%s LANGUAGE=%s RESULT=%s EXIT_CODE=%i "
                         "RUN_DURATION_USEC=%" PRIu64 " CPU_USEC=%" PRIu64 " MEMORY_PEAK=%" PRIu64
                         " UID=%" PRIu32 " QUEUED_USEC=%" PRIu64
                         " WORKER_SLOT=%u CODE_BYTES=%zu STDOUT_BYTES=%zu STDERR_BYTES=%zu",
                         rq->method, route, status, f->code, duration, h->peer, rq->number, term, f->run_id,
                         f->language, f->result, f->exit_code, f->run_usec, f->cpu_usec, f->memory_peak,
                         f->uid, f->queued_usec, f->worker_slot, f->code_bytes, f->stdout_bytes,
                         f->stderr_bytes);
        else
                log_info("METHOD=%s ROUTE=%s STATUS=%u CODE=%i DURATION_USEC=%" PRIu64
                         " PEER=%s REQUEST=%u TERMINATION=%s",
                         rq->method, route, status, f->code, duration, h->peer, rq->number, term);
}

static void mhd_logger(void *cls, const char *format, va_list ap) {
        _cleanup_free_ char *message = NULL;

        if (vasprintf(&message, format, ap) < 0)
                return;
        message[strcspn(message, "\n")] = '\0';
        log_debug("libmicrohttpd: %s", message);
}

/* Called by libmicrohttpd once a request line is in: the request starts here if the loop did not see
 * its first byte (it may have come with the previous request). Returns the per-request pointer. */
static void *request_started(void *cls, const char *uri, struct MHD_Connection *connection) {
        Http *h = cls;

        request_reset(&h->req);
        h->line_deadline = 0; /* the request line is in */
        if (h->phase != PHASE_RECEIVING)
                phase_enter(h, PHASE_RECEIVING);
        h->req.started = true;
        h->req.start_usec = h->phase_start;
        h->req.number = ++h->n_requests;
        (void) snprintf(h->req.method, sizeof(h->req.method), "%s", "?");
        return &h->req;
}

/* Bytes of the connection that its reader has taken from the socket: all received, minus those waiting. */
static int socket_bytes_consumed(int fd, uint64_t *ret) {
        struct tcp_info ti = { 0 };
        socklen_t len = sizeof(ti);
        int pending = 0;

        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
                return -errno;
        if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
                return -EOPNOTSUPP; /* a kernel before 4.1 */
        if (ioctl(fd, FIONREAD, &pending) < 0)
                return -errno;
        if ((uint64_t) pending > ti.tcpi_bytes_received)
                return -EAGAIN; /* bytes came between the two calls */
        *ret = ti.tcpi_bytes_received - (uint64_t) pending;
        return 0;
}

/* After a keep-alive answer: if libmicrohttpd read more than the requests so far (junk, or a pipelined
 * request not yet whole), those bytes are a request line in the making, and its 2 s count from now. The
 * loop would otherwise wait for new bytes, and see none until the idle timeout. */
static void leftover_check(Http *h, const Request *rq) {
        uint64_t consumed = 0;

        if (rq->chunked)
                h->accounting = false;
        if (!h->accounting)
                return;
        h->accounted += rq->framed_bytes;
        if (socket_bytes_consumed(h->fd, &consumed) < 0) {
                h->accounting = false;
                return;
        }
        if (consumed > h->accounted) {
                h->line_deadline = now(CLOCK_MONOTONIC) + FIRST_LINE_USEC;
                h->line_bytes = true;
                h->accounted = consumed; /* from here on, the next request is counted anew */
        }
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                              enum MHD_RequestTerminationCode toe) {
        Http *h = cls;
        Request *rq = *req_cls;
        const union MHD_ConnectionInfo *info;
        unsigned status = rq ? rq->resp.status : 0;
        const char *conn_header;
        bool closing;

        /* A client that said it closes after this answer sends nothing more to check. */
        conn_header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);
        closing = conn_header && strcasestr(conn_header, "close");

        /* libmicrohttpd's own answers (431, 400 for a malformed request) are known only to it. */
        info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
        if (info && info->http_status > 0)
                status = info->http_status;
        if (rq && rq->started)
                request_log(h, rq, status, toe);
        if (rq && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !closing)
                leftover_check(h, rq);
        if (rq)
                request_reset(rq);
        *req_cls = NULL;
        phase_enter(h, PHASE_IDLE);
}

static ssize_t answer_reader(void *cls, uint64_t pos, char *buf, size_t max) {
        ssize_t n = answer_read(cls, pos, buf, max);

        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void answer_release(void *cls) {
        answer_free(cls);
}

/* Queues resp; its body, or its answer, goes to libmicrohttpd. */
static enum MHD_Result respond(Http *h, struct MHD_Connection *connection, ApiResponse *resp, bool close) {
        _cleanup_(MHD_destroy_responsep) struct MHD_Response *response = NULL;
        enum MHD_Result ret;

        if (resp->answer) {
                /* Made ANSWER_BLOCK bytes at a time as the client takes them (answer.h). */
                response = MHD_create_response_from_callback(answer_size(resp->answer), ANSWER_BLOCK,
                                                             answer_reader, resp->answer, answer_release);
                if (!response)
                        return MHD_NO;
                resp->answer = NULL; /* libmicrohttpd frees it with the response */
        } else if (resp->body) {
                response =
                        MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
                if (!response)
                        return MHD_NO;
                (void) TAKE_PTR(resp->body); /* libmicrohttpd free()s it with the response */
        } else {
                response = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
                if (!response)
                        return MHD_NO;
        }
        if (resp->content_type &&
            MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type) != MHD_YES)
                return MHD_NO;
        if (close && MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES)
                return MHD_NO;

        ret = MHD_queue_response(connection, resp->status, response);
        phase_enter(h, PHASE_SENDING);
        return ret;
}

static enum MHD_Result respond_too_large(Http *h, struct MHD_Connection *connection, Request *rq) {
        int r;

        r = api_error(413, -400, "request body too large", &rq->resp);
        if (r < 0)
                return MHD_NO;
        /* The rest of the body stays unread, so the connection cannot carry another request; it is
         * dropped after the answer (linger_drain()). */
        h->linger = true;
        return respond(h, connection, &rq->resp, /* close= */ true);
}

/* The worker could not set itself up (its runner is unreachable): every request gets the 503 that says
 * why, and the connection ends after it. A body is not read: the lingering close drops it. */
static enum MHD_Result respond_refusal(Http *h, struct MHD_Connection *connection, Request *rq) {
        if (api_error(503, -503, h->refusal, &rq->resp) < 0)
                return MHD_NO;
        h->linger =
                MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) ||
                MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        return respond(h, connection, &rq->resp, /* close= */ true);
}

static int body_append(Request *rq, const char *data, size_t n, size_t max) {
        if (n > max - rq->body_len)
                return -EFBIG;
        if (rq->body_len + n + 1 > rq->body_alloc) {
                size_t want = rq->body_alloc ? rq->body_alloc : 16384;
                char *b;

                while (want < rq->body_len + n + 1)
                        want = want > SIZE_MAX / 2 ? SIZE_MAX : want * 2;
                if (want > max + 1)
                        want = max + 1;
                b = realloc(rq->body, want);
                if (!b)
                        return -ENOMEM;
                rq->body = b;
                rq->body_alloc = want;
        }
        memcpy(rq->body + rq->body_len, data, n);
        rq->body_len += n;
        rq->body[rq->body_len] = '\0';
        return 0;
}

static ApiRequest api_request(struct MHD_Connection *connection, const char *url, const char *method,
                              const Request *rq) {
        return (ApiRequest){
                .method = method,
                .url = url,
                .api_key = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "X-Api-Key"),
                .language = MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, "language"),
                .body = rq->body,
                .body_len = rq->body_len,
        };
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        unsigned *counts = cls;

        if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
                counts[0]++;
        else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
                counts[1]++;
        return MHD_YES;
}

/* What libmicrohttpd lets through and we do not: headers or a URL beyond our limits, and a body length
 * said twice. Returns 1 with rq->resp set to the answer, 0 to go on, -ENOMEM. Also records the bytes of
 * the request's framing (see leftover_check()). */
static int framing_check(Http *h, struct MHD_Connection *connection, const char *url, Request *rq) {
        const union MHD_ConnectionInfo *info;
        const char *length;
        unsigned counts[2] = { 0, 0 }; /* Content-Length, Transfer-Encoding */
        uint64_t n = 0;
        int r = 0;

        info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        (void) MHD_get_connection_values(connection, MHD_HEADER_KIND, count_header, counts);
        length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length && parse_uint64(length, &n) < 0)
                n = 0;
        rq->chunked = counts[1] > 0;
        rq->framed_bytes = (info ? info->header_size : 0) + n;
        if (!info)
                h->accounting = false;

        if (info && info->header_size > HEADERS_MAX)
                r = api_error(431, -400, "request headers too large", &rq->resp);
        else if (strlen(url) > URL_MAX)
                r = api_error(414, -400, "request URL too long", &rq->resp);
        else if (counts[0] > 1)
                r = api_error(400, -400, "more than one Content-Length header", &rq->resp);
        else if (counts[0] > 0 && counts[1] > 0)
                r = api_error(400, -400, "both Content-Length and Transfer-Encoding", &rq->resp);
        else
                return 0;
        return r < 0 ? r : 1;
}

/* The headers are in: checks the framing, then route and key before any body. */
static enum MHD_Result on_headers(Http *h, struct MHD_Connection *connection, const char *url,
                                  const char *method, Request *rq) {
        const char *length;
        ApiRequest req;
        uint64_t n;
        int r;

        rq->headers_seen = true;
        (void) snprintf(rq->method, sizeof(rq->method), "%s", method);
        if (h->refusal)
                return respond_refusal(h, connection, rq);

        r = framing_check(h, connection, url, rq);
        if (r < 0)
                return MHD_NO;
        if (r > 0)
                return respond(h, connection, &rq->resp, /* close= */ true);

        length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (!MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) &&
            (!length || (parse_uint64(length, &n) >= 0 && n == 0)))
                return MHD_YES; /* no body: answered at once by the call below, keep-alive intact */

        /* Route and key before the body: a stranger's body is not worth reading. Answering now leaves the
         * body unread, so libmicrohttpd closes the connection after the answer. */
        req = api_request(connection, url, method, rq);
        r = api_precheck(h->api, &req, &rq->resp);
        if (r < 0)
                return MHD_NO;
        if (r > 0) {
                h->linger = true;
                return respond(h, connection, &rq->resp, /* close= */ true);
        }

        if (length && parse_uint64(length, &n) >= 0 && n > h->body_max)
                return respond_too_large(h, connection, rq);
        return MHD_YES; /* libmicrohttpd sends 100 Continue if asked, then the body */
}

static enum MHD_Result on_body_data(Http *h, Request *rq, const char *upload_data,
                                    size_t *upload_data_size) {
        size_t n = *upload_data_size;
        int r;

        *upload_data_size = 0;
        if (rq->too_large)
                return MHD_YES;
        r = body_append(rq, upload_data, n, h->body_max);
        if (r == -EFBIG) {
                /* A chunked body grew past the cap. libmicrohttpd takes no answer in the middle of a body:
                 * the rest is read and dropped, within the 10 s of the request. */
                rq->too_large = true;
                free(rq->body);
                rq->body = NULL;
                rq->body_len = rq->body_alloc = 0;
                return MHD_YES;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot hold the body of a request from %s: %m", h->peer);
                return MHD_NO;
        }
        return MHD_YES;
}

/* The whole request is in: runs it and answers. */
static enum MHD_Result on_request_complete(Http *h, struct MHD_Connection *connection, const char *url,
                                           const char *method, Request *rq) {
        ApiRequest req;
        int r;

        if (rq->too_large)
                return respond_too_large(h, connection, rq);

        phase_enter(h, PHASE_PROCESSING);
        /* The run may take longer than the idle timeout: none while it runs, and a fresh one after (setting
         * a timeout where there was none restarts libmicrohttpd's inactivity clock). */
        (void) MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, 0U);
        req = api_request(connection, url, method, rq);
        r = api_handle(h->api, &req, &rq->resp);
        (void) MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, IDLE_TIMEOUT_SEC);
        if (r < 0) {
                log_error_errno(r, "Cannot answer %s '%s' from %s: %m", rq->method, url, h->peer);
                return MHD_NO;
        }
        /* The answer may wait long for its client (SEND_TIMEOUT_USEC): the request's body goes now, and the
         * heap that held it and the run's parts goes back to the kernel, which glibc does not do by itself
         * for memory freed below its top (a 16 MiB request left 46 MiB resident). */
        free(TAKE_PTR(rq->body));
        rq->body_len = rq->body_alloc = 0;
        (void) malloc_trim(0);
        /* Only a request with a valid key buys the connection more time (see the top of this file). */
        if (rq->resp.facts.authenticated) {
                h->authenticated = true;
                h->trusted_until = now(CLOCK_MONOTONIC) + TRUST_USEC;
        }
        /* A worker whose line to the runner broke (serve's runner died) has nothing more to offer this
         * connection: closing it sends the client to a new worker. One past its time says so too. */
        return respond(h, connection, &rq->resp,
                       /* close= */ runner_client_broken(h->runner) ||
                               now(CLOCK_MONOTONIC) >= h->trusted_until);
}

/* libmicrohttpd calls this once for the headers, once per piece of body, and once when all is in. */
static enum MHD_Result handle_request(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version, const char *upload_data,
                                      size_t *upload_data_size, void **req_cls) {
        Http *h = cls;
        Request *rq = *req_cls;

        if (!rq)
                return MHD_NO; /* request_started() always runs first; never reached */
        if (!rq->headers_seen)
                return on_headers(h, connection, url, method, rq);
        if (*upload_data_size > 0)
                return on_body_data(h, rq, upload_data, upload_data_size);
        return on_request_complete(h, connection, url, method, rq);
}

/* The connection's end, as libmicrohttpd reports it. Its own count of connections cannot say this: 1.0
 * counts a connection only once MHD_run() has processed it, 0.9.75 right in MHD_add_connection(). */
static void connection_notified(void *cls, struct MHD_Connection *connection, void **socket_context,
                                enum MHD_ConnectionNotificationCode toe) {
        Http *h = cls;

        if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
                h->open = false;
}

static int timeout_msec(struct MHD_Daemon *daemon, uint64_t limit_usec) {
        MHD_UNSIGNED_LONG_LONG mhd;
        uint64_t ms =
                limit_usec == UINT64_MAX ? UINT64_MAX : (limit_usec + USEC_PER_MSEC - 1) / USEC_PER_MSEC;

        if (MHD_get_timeout(daemon, &mhd) == MHD_YES && mhd < ms)
                ms = mhd;
        return ms > INT_MAX ? -1 : (int) ms;
}

/* A request has begun to arrive: if the manager published a new configuration since the Api was made,
 * the request gets a new Api (sandbox, prepared run, admission) from it. If the new one cannot be
 * loaded, the old one stays, as the manager's reload does for a refused file. */
static void reload_if_stale(Http *h) {
        _cleanup_free_ Config *cfg = NULL;
        _cleanup_free_ char *why = NULL;
        uint64_t generation = 0;
        Api *api = NULL;
        int r;

        if (!h->reloadable || !api_config_stale(h->api))
                return;
        cfg = calloc(1, sizeof(*cfg));
        if (!cfg)
                return;
        r = config_init_defaults(cfg);
        if (r >= 0) {
                r = runner_client_fetch_config(h->runner, cfg, &generation, &why);
                if (r >= 0)
                        r = api_new(cfg, h->runner, generation, &api);
                if (r < 0)
                        config_done(cfg);
        }
        if (r < 0) {
                if (why)
                        log_warning("The runner's configuration is refused: %s", why);
                log_warning_errno(r, "Keeping the configuration this connection started with: %m");
                h->reloadable = false; /* one warning per connection, not one per request */
                return;
        }
        api_free(h->api);
        h->api = api;
        if (h->reloaded_cfg)
                config_done(h->reloaded_cfg);
        free(h->reloaded_cfg);
        h->reloaded_cfg = TAKE_PTR(cfg);
        h->cfg = h->reloaded_cfg;
        h->body_max = api_body_max(h->cfg);
        log_debug("Connection from %s: using the configuration the manager published", h->peer);
}

/* The most bytes a lingering close drops: twice the largest body, at least LINGER_BYTES_MIN. */
static uint64_t linger_max(size_t body_max) {
        uint64_t twice = (uint64_t) body_max > UINT64_MAX / 2 ? UINT64_MAX : (uint64_t) body_max * 2;

        return twice < LINGER_BYTES_MIN ? LINGER_BYTES_MIN : twice;
}

/* The lingering close: our answer is out (libmicrohttpd closed its descriptor, fd is the last one).
 * FIN to the client, then read and drop what it still sends until it closes, goes quiet, or a bound is
 * reached. Only then is the socket closed, with nothing unread, so the client sees the answer instead
 * of a reset. Returns the bytes dropped. */
static uint64_t linger_drain(int fd, uint64_t max_bytes) {
        uint64_t deadline = now(CLOCK_MONOTONIC) + LINGER_USEC, dropped = 0;
        char buf[64 * 1024];

        (void) shutdown(fd, SHUT_WR); /* libmicrohttpd may have done so; ENOTCONN is harmless */
        while (dropped < max_bytes) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                uint64_t now_usec = now(CLOCK_MONOTONIC);
                ssize_t n;
                int ms;

                if (now_usec >= deadline)
                        break;
                ms = (int) ((deadline - now_usec) / USEC_PER_MSEC);
                if (ms > LINGER_QUIET_MSEC)
                        ms = LINGER_QUIET_MSEC;
                if (poll(&pfd, 1, ms) <= 0)
                        break; /* quiet, or the socket is gone */
                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        break; /* the client closed, or reset */
                dropped += (uint64_t) n;
        }
        return dropped;
}

/* The request line did not come in time. A client that sent part of one gets a 400 in Dify's envelope,
 * written here since libmicrohttpd has no request to answer; one that sent nothing is closed. Not logged
 * above debug: a flood of such connections would flood the log too. Returns whether the connection is
 * to be dropped. */
static bool line_timeout(Http *h, struct MHD_Daemon *daemon) {
        _cleanup_(api_response_done) ApiResponse resp = { 0 };
        _cleanup_free_ char *head = NULL;
        int n;

        /* libmicrohttpd may have answered a malformed line itself and only not yet closed: then it is
         * done, and nothing more is owed. Or the line came in this very instant: then it is served. */
        (void) MHD_run(daemon);
        if (!h->open)
                return true;
        if (h->line_deadline == 0)
                return false;

        log_debug("Dropping the connection from %s: no request line within %" PRIu64 " s", h->peer,
                  FIRST_LINE_USEC / USEC_PER_SEC);
        if (!h->line_bytes || api_error(400, -400, "request line not received in time", &resp) < 0)
                return true;
        n = asprintf(&head,
                     "HTTP/1.1 400 Bad Request\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     resp.content_type, resp.body_len);
        if (n < 0) {
                head = NULL;
                return true;
        }
        /* Best effort on a client that is being dropped: a short write loses only the answer. */
        (void) !send(h->fd, head, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) !send(h->fd, resp.body, resp.body_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        return true;
}

/* Whether the connection may be asked to make room (connslot.h): between requests, not in the middle of
 * a request line, and never authenticated. A connection that has not yet sent its first request is not:
 * it may be the legitimate client the room is made for, and it has FIRST_LINE_USEC anyway. */
static bool evictable(const Http *h) {
        return h->slot && !h->authenticated && h->n_requests > 0 && h->line_deadline == 0;
}

/* Between requests: waits for the next one ourselves, to see its first byte, or for a limit. SIGTERM and
 * SIGINT are let in here only: nothing is in progress, so ending is harmless. Returns 1 when the
 * connection ends here, 0 to go on, or a negative errno (logged). */
static int idle_wait(Http *h, struct MHD_Daemon *daemon, const sigset_t *idle_mask, uint64_t now_usec) {
        struct pollfd pfd[2] = { { .fd = h->fd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
        uint64_t limit = h->trusted_until > now_usec ? h->trusted_until - now_usec : 0;
        struct timespec ts;
        int ms, p;

        if (h->line_deadline == 0 && limit == 0) {
                log_debug("Closing the idle connection from %s: %s", h->peer,
                          h->authenticated ? "idle timeout" : "no authenticated request in time");
                return 1;
        }
        if (h->line_deadline > 0 && h->line_deadline - now_usec < limit)
                limit = h->line_deadline - now_usec;
        if (evictable(h))
                pfd[1].fd = connslot_evictable_fd(h->slot); /* -errno: not polled, ppoll skips it */
        else if (h->slot)
                connslot_evictable_end(h->slot);

        ms = timeout_msec(daemon, limit);
        ts = (struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        p = ppoll(pfd, 2, ms < 0 ? NULL : &ts, idle_mask);
        if (p < 0 && errno != EINTR)
                return log_error_errno(-errno, "Cannot wait on the connection from %s: %m", h->peer);
        if (p > 0 && pfd[0].revents == 0 && pfd[1].revents != 0 && connslot_evicted(h->slot) > 0) {
                /* Not above debug: a flood would flood the log too. */
                log_debug("Closing the idle unauthenticated connection from %s: room is wanted", h->peer);
                return 1;
        }
        if (p > 0 && pfd[0].revents != 0) {
                if (h->slot)
                        connslot_evictable_end(h->slot);
                reload_if_stale(h);
                phase_enter(h, PHASE_RECEIVING);
                if (h->line_deadline == 0)
                        h->line_deadline = h->phase_start + FIRST_LINE_USEC;
                h->line_bytes = true;
        }
        if (MHD_run(daemon) != MHD_YES)
                return log_error_errno(-EIO, "libmicrohttpd failed on the connection from %s", h->peer);
        return 0;
}

/* Drives libmicrohttpd until the connection is closed or a limit drops it. */
static int serve_loop(Http *h, struct MHD_Daemon *daemon, const sigset_t *idle_mask) {
        int r;

        while (h->open) {
                uint64_t now_usec = now(CLOCK_MONOTONIC), limit;

                if (h->line_deadline > 0 && now_usec >= h->line_deadline && line_timeout(h, daemon))
                        return 0;

                if (h->phase == PHASE_IDLE) {
                        r = idle_wait(h, daemon, idle_mask, now_usec);
                        if (r != 0)
                                return r < 0 ? r : 0;
                        continue;
                }

                limit = h->phase == PHASE_SENDING ? SEND_TIMEOUT_USEC : RECEIVE_TIMEOUT_USEC;
                if (now_usec - h->phase_start >= limit) {
                        log_warning("Dropping the connection from %s: %s not complete within %" PRIu64 " s",
                                    h->peer, h->phase == PHASE_SENDING ? "answer" : "request",
                                    limit / USEC_PER_SEC);
                        return 0;
                }
                limit = h->phase_start + limit - now_usec;
                if (h->line_deadline > 0 && h->line_deadline - now_usec < limit)
                        limit = h->line_deadline - now_usec;
                if (MHD_run_wait(daemon, timeout_msec(daemon, limit)) != MHD_YES)
                        return log_error_errno(-EIO, "libmicrohttpd failed on the connection from %s",
                                               h->peer);
        }
        return 0;
}

/* Sets up h's connection on fd (taken) and serves it; h->api is made here unless h->refusal is set. */
static int serve_connection(Http *h, uint64_t config_generation, int fd) {
        _cleanup_close_ int conn_fd = fd;
        _cleanup_(MHD_stop_daemonp) struct MHD_Daemon *daemon = NULL;
        struct sockaddr_storage ss = { 0 };
        socklen_t ss_len = sizeof(ss);
        sigset_t stop_signals, idle_mask;
        _cleanup_close_ int linger_fd = -EBADF;
        int r;

        /* A request in progress finishes before a stop takes effect; see serve_loop(). */
        if (sigemptyset(&stop_signals) < 0 || sigaddset(&stop_signals, SIGTERM) < 0 ||
            sigaddset(&stop_signals, SIGINT) < 0 || sigprocmask(SIG_BLOCK, &stop_signals, &idle_mask) < 0)
                return log_error_errno(-errno, "Cannot block the stop signals: %m");
        (void) sigdelset(&idle_mask, SIGTERM);
        (void) sigdelset(&idle_mask, SIGINT);

        if (getpeername(fd, (struct sockaddr *) &ss, &ss_len) < 0)
                return log_error_errno(-errno, "Cannot get the peer of the connection: %m");
        peer_format(&ss, ss_len, h->peer, sizeof(h->peer));
        h->accounting = ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
        /* Nothing the sandbox or a helper execs may inherit the client's socket. */
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return log_error_errno(-errno, "Cannot set close-on-exec on the connection: %m");

        /* Ours, so that libmicrohttpd's close() is not the last one: see linger_drain(). */
        linger_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (linger_fd < 0)
                return log_error_errno(-errno, "Cannot duplicate the connection: %m");

        if (!h->refusal) {
                r = api_new(h->cfg, h->runner, config_generation, &h->api);
                if (r < 0)
                        return log_error_errno(r, "Cannot set up the API: %m");
        }

        daemon = MHD_start_daemon(
                MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle_request, h,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) MHD_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                IDLE_TIMEOUT_SEC, MHD_OPTION_URI_LOG_CALLBACK, request_started, h,
                MHD_OPTION_NOTIFY_COMPLETED, request_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
                connection_notified, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL, MHD_OPTION_END);
        if (!daemon)
                r = log_error_errno(-EIO, "Cannot start libmicrohttpd for the connection from %s", h->peer);
        else {
                h->open = true; /* until libmicrohttpd reports the close, which may come inside this call */
                if (MHD_add_connection(daemon, TAKE_FD(conn_fd), (const struct sockaddr *) &ss, ss_len) !=
                    MHD_YES)
                        r = log_error_errno(-errno, "Cannot serve the connection from %s: %m", h->peer);
                else
                        r = serve_loop(h, daemon, &idle_mask);
        }
        if (daemon)
                MHD_stop_daemon(TAKE_PTR(daemon)); /* closes its descriptor; a request in it is recorded */
        if (h->linger) {
                uint64_t dropped = linger_drain(linger_fd, linger_max(h->body_max));

                log_debug("Connection from %s: dropped %" PRIu64 " bytes of an unread body before closing",
                          h->peer, dropped);
        }
        return r;
}

/* How long a connection without an authenticated request may stay: none at all under pressure, or
 * when its worker holds no slot to tell (see "Unauthenticated keep-alive"). */
static uint64_t unauthenticated_budget(const ConnSlot *slot) {
        return slot && !connslot_pressure_at_start(slot) ? TRUST_USEC : 0;
}

int http_serve_connection(const Config *cfg, uint64_t config_generation, bool reloadable,
                          RunnerClient *runner, ConnSlot *slot, int fd) {
        Http h = { .cfg = cfg,
                   .reloadable = reloadable,
                   .runner = runner,
                   .fd = fd,
                   .body_max = api_body_max(cfg),
                   .phase = PHASE_IDLE,
                   .line_deadline = now(CLOCK_MONOTONIC) + FIRST_LINE_USEC,
                   .slot = slot,
                   .trusted_until = now(CLOCK_MONOTONIC) + unauthenticated_budget(slot) };
        int r;

        r = serve_connection(&h, config_generation, fd);
        request_reset(&h.req);
        h.api = api_free(h.api);
        if (h.reloaded_cfg)
                config_done(h.reloaded_cfg);
        free(h.reloaded_cfg);
        return r;
}

int http_serve_refusal(const Config *cfg, const char *message, int fd) {
        Http h = { .cfg = cfg,
                   .fd = fd,
                   .body_max = api_body_max(cfg),
                   .phase = PHASE_IDLE,
                   .line_deadline = now(CLOCK_MONOTONIC) + FIRST_LINE_USEC,
                   .trusted_until = now(CLOCK_MONOTONIC) + unauthenticated_budget(NULL),
                   .refusal = message };
        int r;

        r = serve_connection(&h, 0, fd);
        request_reset(&h.req);
        return r;
}
