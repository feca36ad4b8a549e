/* protocol: see protocol.h. */

#include "runner-protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/runtime.h"

#define REPLY_FLAG_WARM (UINT32_C(1) << 0)
#define REPLY_FLAG_STDOUT_TRUNCATED (UINT32_C(1) << 1)
#define REPLY_FLAG_STDERR_TRUNCATED (UINT32_C(1) << 2)
#define REPLY_FLAGS_ALL (REPLY_FLAG_WARM | REPLY_FLAG_STDOUT_TRUNCATED | REPLY_FLAG_STDERR_TRUNCATED)
#define REQUEST_FLAG_NETWORK (UINT32_C(1) << 0)
#define REQUEST_FLAG_WANTS_PRELOAD (UINT32_C(1) << 1)
#define REQUEST_FLAGS_ALL (REQUEST_FLAG_NETWORK | REQUEST_FLAG_WANTS_PRELOAD)
#define SEALS_REQUIRED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

void runner_request_encode(const RunnerRequest *req, RunnerRequestWire *ret) {
        *ret = (RunnerRequestWire){
                .magic = RUNNER_PROTOCOL_MAGIC,
                .version = RUNNER_PROTOCOL_VERSION,
                .op = (uint16_t) req->op,
                .language = req->language,
                .flags = req->op != RUNNER_OP_RUN
                                 ? 0
                                 : (req->network ? REQUEST_FLAG_NETWORK : 0) |
                                           (req->wants_preload ? REQUEST_FLAG_WANTS_PRELOAD : 0),
                .code_len = req->op == RUNNER_OP_RUN ? req->code_len : 0,
        };
}

int runner_request_decode(const void *buf, size_t len, uint64_t code_max, RunnerRequest *ret) {
        RunnerRequestWire w;

        if (len != sizeof(w))
                return -EBADMSG;
        memcpy(&w, buf, sizeof(w));
        if (w.magic != RUNNER_PROTOCOL_MAGIC)
                return -EBADMSG;
        if (w.version != RUNNER_PROTOCOL_VERSION)
                return -EPROTONOSUPPORT;
        if (w.flags & ~REQUEST_FLAGS_ALL)
                return -EBADMSG;
        switch (w.op) {
        case RUNNER_OP_CONFIG:
                if (w.language != 0 || w.flags != 0 || w.code_len != 0)
                        return -EBADMSG;
                break;
        case RUNNER_OP_RUN:
                if (w.language >= (uint32_t) _LANGUAGE_MAX)
                        return -EBADMSG;
                if (w.code_len > code_max || w.code_len > RUNNER_PAYLOAD_MAX)
                        return -EMSGSIZE;
                break;
        default:
                return -EBADMSG;
        }
        *ret = (RunnerRequest){
                .op = (RunnerOp) w.op,
                .language = w.language,
                .network = (w.flags & REQUEST_FLAG_NETWORK) != 0,
                .wants_preload = (w.flags & REQUEST_FLAG_WANTS_PRELOAD) != 0,
                .code_len = w.code_len,
        };
        return 0;
}

void runner_reply_encode(const RunnerReply *reply, RunnerReplyWire *ret) {
        *ret = (RunnerReplyWire){
                .magic = RUNNER_PROTOCOL_MAGIC,
                .version = RUNNER_PROTOCOL_VERSION,
                .status = (uint16_t) reply->status,
                .error = reply->error,
                .result = reply->result,
                .exit_code = reply->exit_code,
                .flags = (reply->warm ? REPLY_FLAG_WARM : 0) |
                         (reply->stdout_truncated ? REPLY_FLAG_STDOUT_TRUNCATED : 0) |
                         (reply->stderr_truncated ? REPLY_FLAG_STDERR_TRUNCATED : 0),
                .uid = reply->uid,
                .egress_denials = reply->egress_denials,
                .worker_slot = reply->worker_slot,
                .duration_usec = reply->duration_usec,
                .cpu_usec = reply->cpu_usec,
                .memory_peak = reply->memory_peak,
                .queued_usec = reply->queued_usec,
                .config_generation = reply->config_generation,
        };
        memcpy(ret->run_id, reply->run_id, strnlen(reply->run_id, RUNNER_RUN_ID_MAX));
        for (size_t i = 0; i < _RUNNER_PART_MAX; i++)
                ret->part_len[i] = reply->part_len[i];
}

uint64_t runner_reply_payload_size(const RunnerReply *reply) {
        uint64_t sum = 0;

        for (size_t i = 0; i < _RUNNER_PART_MAX; i++)
                sum += reply->part_len[i]; /* each is at most RUNNER_PAYLOAD_MAX once decoded */
        return sum;
}

int runner_reply_decode(const void *buf, size_t len, RunnerReply *ret) {
        RunnerReplyWire w;
        RunnerReply r;

        if (len != sizeof(w))
                return -EBADMSG;
        memcpy(&w, buf, sizeof(w));
        if (w.magic != RUNNER_PROTOCOL_MAGIC)
                return -EBADMSG;
        if (w.version != RUNNER_PROTOCOL_VERSION)
                return -EPROTONOSUPPORT;
        if (w.status >= _RUNNER_STATUS_MAX || (w.flags & ~REPLY_FLAGS_ALL) != 0)
                return -EBADMSG;
        if (w.status == RUNNER_STATUS_RAN && w.result >= 64)
                return -EBADMSG; /* the caller checks it against RunResult */
        if (w.status == RUNNER_STATUS_FAILED && w.error >= 0)
                return -EBADMSG;
        for (size_t i = 0; i < RUNNER_RUN_ID_MAX; i++)
                if (w.run_id[i] != '\0' && !strchr("0123456789abcdef", w.run_id[i]))
                        return -EBADMSG;

        r = (RunnerReply){
                .status = (RunnerStatus) w.status,
                .error = w.error,
                .result = w.result,
                .exit_code = w.exit_code,
                .warm = w.flags & REPLY_FLAG_WARM,
                .stdout_truncated = w.flags & REPLY_FLAG_STDOUT_TRUNCATED,
                .stderr_truncated = w.flags & REPLY_FLAG_STDERR_TRUNCATED,
                .uid = w.uid,
                .egress_denials = w.egress_denials,
                .worker_slot = w.worker_slot,
                .duration_usec = w.duration_usec,
                .cpu_usec = w.cpu_usec,
                .memory_peak = w.memory_peak,
                .queued_usec = w.queued_usec,
                .config_generation = w.config_generation,
        };
        memcpy(r.run_id, w.run_id, RUNNER_RUN_ID_MAX);
        r.run_id[RUNNER_RUN_ID_MAX] = '\0';
        uint64_t sum = 0;
        for (size_t i = 0; i < _RUNNER_PART_MAX; i++) {
                if (w.part_len[i] > RUNNER_PAYLOAD_MAX)
                        return -EMSGSIZE;
                r.part_len[i] = w.part_len[i];
                sum += w.part_len[i];
        }
        if (sum > RUNNER_PAYLOAD_MAX)
                return -EMSGSIZE;
        *ret = r;
        return 0;
}

#define FDS_MAX 2

int runner_send_fds(int fd, const void *msg, size_t len, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
        } control = { 0 };
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (n_fds > FDS_MAX)
                return -EINVAL;
        if (n_fds > 0) {
                mh.msg_control = control.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

int runner_send(int fd, const void *msg, size_t len, int payload_fd) {
        return runner_send_fds(fd, msg, len, &payload_fd, payload_fd >= 0 ? 1 : 0);
}

/* Takes every fd a message brought into fds (up to max; the rest are closed). Returns how many came. */
static size_t take_received(struct msghdr *mh, int *fds, size_t max) {
        size_t count = 0;

        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < n; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (count < max)
                                fds[count] = fd;
                        else
                                (void) close(fd);
                        count++;
                }
        }
        return count;
}

static void close_all(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                fds[i] = safe_close(fds[i]);
}

int runner_recv_fds(int fd, void *buf, size_t size, int flags, size_t *ret_len, int *ret_fds, size_t max_fds,
                    size_t *ret_n_fds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
        } control = { 0 };
        struct iovec iov = { .iov_base = buf, .iov_len = size };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        int fds[FDS_MAX];
        ssize_t n;

        if (max_fds > FDS_MAX)
                return -EINVAL;
        do
                n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | flags);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        size_t count = take_received(&mh, fds, max_fds);
        size_t kept = count < max_fds ? count : max_fds;
        if (n == 0 && count == 0)
                return -ECONNRESET;
        if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == MSG_CTRUNC && count < FDS_MAX) {
                /* Fewer fds than our buffer holds, yet some were dropped: the kernel could not install
                 * them (scm_detach_fds()), our table is full. Only this message is lost. */
                close_all(fds, kept);
                return -EMFILE;
        }
        if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || count > max_fds) {
                close_all(fds, kept);
                return -EBADMSG;
        }
        *ret_len = (size_t) n;
        memcpy(ret_fds, fds, sizeof(int) * kept);
        *ret_n_fds = kept;
        return 0;
}

int runner_recv(int fd, void *buf, size_t size, int flags, size_t *ret_len, int *ret_payload_fd) {
        size_t n_fds = 0;
        int r;

        r = runner_recv_fds(fd, buf, size, flags, ret_len, ret_payload_fd, 1, &n_fds);
        if (r >= 0 && n_fds == 0)
                *ret_payload_fd = -EBADF;
        return r;
}

int payload_new(const void *const *parts, const uint64_t *lens, size_t n, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;

        fd = memfd_create("difysandbox-payload", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                const char *p = parts[i];
                uint64_t left = lens[i];

                while (left > 0) {
                        ssize_t k =
                                write(fd, p, left > (UINT64_C(1) << 30) ? (size_t) 1 << 30 : (size_t) left);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return k < 0 ? -errno : -EIO;
                        p += k;
                        left -= (uint64_t) k;
                }
        }
        if (fcntl(fd, F_ADD_SEALS, SEALS_REQUIRED | F_SEAL_SEAL) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int payload_check(int fd, uint64_t size) {
        struct stat st;
        int seals;

        seals = fcntl(fd, F_GET_SEALS);
        if (seals < 0)
                return errno == EINVAL ? -EBADMSG : -errno; /* not a memfd: a pipe or FIFO could block us */
        if ((seals & SEALS_REQUIRED) != SEALS_REQUIRED)
                return -EBADMSG; /* its sender could still change it while we read */
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t) st.st_size != size)
                return -EBADMSG;
        return 0;
}

int payload_read(int fd, uint64_t offset, uint64_t len, char **ret) {
        _cleanup_free_ char *buf = NULL;
        uint64_t done = 0;

        if (len > RUNNER_PAYLOAD_MAX)
                return -EMSGSIZE;
        buf = malloc((size_t) len + 1);
        if (!buf)
                return -ENOMEM;
        while (done < len) {
                ssize_t k = pread(fd, buf + done, (size_t) (len - done), (off_t) (offset + done));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EBADMSG; /* shorter than announced */
                done += (uint64_t) k;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}
