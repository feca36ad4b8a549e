#pragma once
/* runner-protocol: owns the wire format between the unprivileged worker and the privileged runner (DESIGN
 * §2), and nothing else speaks it. A connection is an AF_UNIX SOCK_SEQPACKET socket, so one message is one
 * datagram and no message is ever read in parts. Each message is a fixed-size header; bulk data (the
 * code; the outputs of a run; the configuration text) travels in a sealed memfd passed with SCM_RIGHTS,
 * so that neither side parses a stream and the runner never reads more than it has checked.
 *
 * Every decoder treats its input as hostile: a message of the wrong size, magic, version or kind, a
 * length past its limit, or a payload fd that is not a sealed memfd of the announced size is refused,
 * and the caller closes that one connection. Non-logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNNER_PROTOCOL_MAGIC UINT32_C(0x31525344) /* "DSR1" on little-endian hosts */
#define RUNNER_PROTOCOL_VERSION 1
/* The most one payload may hold: above any code_max or two capped outputs the config accepts. */
#define RUNNER_PAYLOAD_MAX (UINT64_C(256) << 20)

typedef enum RunnerOp {
        RUNNER_OP_CONFIG = 1, /* the worker asks for the configuration, as config_format_for_worker() */
        RUNNER_OP_RUN = 2,    /* the worker asks for a run of the code in the payload */
} RunnerOp;

typedef struct RunnerRequest {
        RunnerOp op;
        uint32_t language; /* enum Language, checked against _LANGUAGE_MAX by the decoder */
        bool network;
        bool wants_preload; /* the code names a pool_preload module (preload-match.h): a hint for which
                             * prepared run serves it, RUNNER_OP_RUN only */
        uint64_t code_len;  /* the payload's size, RUNNER_OP_RUN only */
} RunnerRequest;

typedef enum RunnerStatus {
        RUNNER_STATUS_RAN,     /* the snippet ran: result, exit code and outputs are set */
        RUNNER_STATUS_FAILED,  /* the sandbox failed: error, step and detail say where */
        RUNNER_STATUS_BUSY,    /* max_requests in flight: refused at once */
        RUNNER_STATUS_TIMEOUT, /* admitted, but no worker slot came free within the queue's bound */
        RUNNER_STATUS_CONFIG,  /* the answer to RUNNER_OP_CONFIG: the payload is the configuration */
        _RUNNER_STATUS_MAX,
} RunnerStatus;

/* The parts of a reply's payload, in this order. */
typedef enum RunnerPart {
        RUNNER_PART_STDOUT,
        RUNNER_PART_STDERR,
        RUNNER_PART_ERROR,  /* the API's `error` text */
        RUNNER_PART_STEP,   /* RUNNER_STATUS_FAILED: the step that failed */
        RUNNER_PART_DETAIL, /* RUNNER_STATUS_FAILED: what the operator should know */
        RUNNER_PART_CONFIG, /* RUNNER_STATUS_CONFIG: config_format() text */
        _RUNNER_PART_MAX,
} RunnerPart;

#define RUNNER_RUN_ID_MAX 32

typedef struct RunnerReply {
        RunnerStatus status;
        int32_t error; /* RUNNER_STATUS_FAILED: a negative errno */
        uint32_t result;
        int32_t exit_code;
        bool warm, stdout_truncated, stderr_truncated;
        uint32_t uid, egress_denials, worker_slot;
        uint64_t duration_usec, cpu_usec, memory_peak, queued_usec;
        uint64_t config_generation; /* the manager's, of the configuration the runner used */
        char run_id[RUNNER_RUN_ID_MAX + 1];
        uint64_t part_len[_RUNNER_PART_MAX];
} RunnerReply;

/* Fixed-size wire forms; the encoders fill them, the decoders check them. */
typedef struct __attribute__((packed)) RunnerRequestWire {
        uint32_t magic;
        uint16_t version;
        uint16_t op;
        uint32_t language;
        uint32_t flags; /* bit 0 network, bit 1 wants_preload (runner-protocol.c); bit 0 alone is the
                         * whole "network" word the first workers sent */
        uint64_t code_len;
} RunnerRequestWire;

typedef struct __attribute__((packed)) RunnerReplyWire {
        uint32_t magic;
        uint16_t version;
        uint16_t status;
        int32_t error;
        uint32_t result;
        int32_t exit_code;
        uint32_t flags;
        uint32_t uid, egress_denials, worker_slot;
        uint64_t duration_usec, cpu_usec, memory_peak, queued_usec, config_generation;
        char run_id[RUNNER_RUN_ID_MAX];
        uint64_t part_len[_RUNNER_PART_MAX];
} RunnerReplyWire;

void runner_request_encode(const RunnerRequest *req, RunnerRequestWire *ret);
/* -EBADMSG: wrong size, magic, kind, language or flag; -EPROTONOSUPPORT: another version; -EMSGSIZE: code
 * longer than code_max. */
int runner_request_decode(const void *buf, size_t len, uint64_t code_max, RunnerRequest *ret);

void runner_reply_encode(const RunnerReply *reply, RunnerReplyWire *ret);
/* The same checks; a payload part or their sum past RUNNER_PAYLOAD_MAX is -EMSGSIZE. */
int runner_reply_decode(const void *buf, size_t len, RunnerReply *ret);
uint64_t runner_reply_payload_size(const RunnerReply *reply);

/* One message and at most one fd (payload_fd < 0: none). Never blocks: a peer that does not read its
 * replies gets -EAGAIN, and the caller drops it. */
int runner_send(int fd, const void *msg, size_t len, int payload_fd);
/* The same with up to two fds, for the runner's own children (a connection and its code). */
int runner_send_fds(int fd, const void *msg, size_t len, const int *fds, size_t n_fds);
int runner_recv_fds(int fd, void *buf, size_t size, int flags, size_t *ret_len, int *ret_fds, size_t max_fds,
                    size_t *ret_n_fds);
/* Receives one message of at most size bytes into buf, and the fd that came with it (-EBADF: none).
 * -ECONNRESET at the end of the connection; -EBADMSG for a message larger than size or with more than
 * one fd (any fd received is closed); -EMFILE when the message came with fds that could not be installed
 * (MSG_CTRUNC: our descriptor table is full): the message is consumed, the connection is still good. With
 * MSG_DONTWAIT in flags, -EAGAIN when nothing is there. */
int runner_recv(int fd, void *buf, size_t size, int flags, size_t *ret_len, int *ret_payload_fd);

/* A sealed memfd holding the n parts one after the other. */
int payload_new(const void *const *parts, const uint64_t *lens, size_t n, int *ret_fd);
/* Checks that fd is a memfd sealed against writes and size changes, holding exactly size bytes. */
int payload_check(int fd, uint64_t size);
/* Reads len bytes at offset into a malloc()ed, NUL-terminated buffer. */
int payload_read(int fd, uint64_t offset, uint64_t len, char **ret);
