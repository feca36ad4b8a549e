/* enter: the final seccomp stage, preloaded into the interpreter (LD_PRELOAD). Its constructor runs after
 * ld.so has loaded the interpreter's libraries and before main(), so the interpreter's start-up is done
 * under the wider exec stage and everything after it, user code included, under the final one. It uses
 * no libc allocation and no libseccomp: the filter arrives compiled (enter-protocol.h). */

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/time-util.h"
#include "enter-protocol.h"
#include "enter-sizes.h"

static void enter_fail(const char *what) {
        static const char prefix[] = "difysandbox-enter: ";
        (void) !write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
        (void) !write(STDERR_FILENO, what, strlen(what));
        (void) !write(STDERR_FILENO, "\n", 1);
        _exit(125); /* no ack was sent: the parent reports a sandbox failure */
}

/* The ack, with the final stage's listener as SCM_RIGHTS, in one message. */
static int send_ack(const EnterAck *ack, int listener) {
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } control = { 0 };
        struct iovec iov = { .iov_base = (void *) ack, .iov_len = sizeof(*ack) };
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &listener, sizeof(int));
        for (;;) {
                ssize_t n = sendmsg(ENTER_FD_ACK, &msg, MSG_NOSIGNAL);
                if (n == (ssize_t) sizeof(*ack))
                        return 0;
                if (n < 0 && errno == EINTR)
                        continue;
                return -1;
        }
}

__attribute__((constructor)) static void enter_final_stage(void) {
        static struct {
                EnterConfig config;
                struct sock_filter filter[BPF_MAXINSNS];
        } in;
        struct sock_fprog prog;
        size_t size = 0;
        EnterAck ack = { .tag = ENTER_ACK };
        int listener;

        for (;;) {
                ssize_t n = read(ENTER_FD_FILTER, (char *) &in + size, sizeof(in) - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        enter_fail("cannot read the final filter");
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size == sizeof(in))
                        enter_fail("final filter too large");
        }
        _Static_assert(offsetof(__typeof__(in), filter) == sizeof(EnterConfig), "no padding");
        if (size <= sizeof(EnterConfig) || in.config.magic != ENTER_CONFIG_MAGIC ||
            (size - sizeof(EnterConfig)) % sizeof(struct sock_filter) != 0)
                enter_fail("final filter malformed");
        size -= sizeof(EnterConfig);
        enter_sizes_set(in.config.memory_max, in.config.tmp_size);
        (void) close(ENTER_FD_FILTER);

        /* The code fd goes where the interpreter reads it before the filter, so that the filter is the last
         * step before the ack (the final stage allows dup3 too, for os.dup2()). */
        if (dup3(ENTER_FD_CODE, CODE_FD, O_CLOEXEC) != CODE_FD)
                enter_fail("cannot move the code fd");
        (void) close(ENTER_FD_CODE);

        prog = (struct sock_fprog){ .len = (unsigned short) (size / sizeof(struct sock_filter)),
                                    .filter = in.filter };
        /* TSYNC: should the interpreter ever start a thread before main, it gets the filter too (with a
         * listener, the kernel wants TSYNC_ESRCH: a thread it cannot sync fails the call instead).
         * NEW_LISTENER: the calls this stage refuses go to the run's supervisor, which names them. */
        listener = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                 SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
                                         SECCOMP_FILTER_FLAG_NEW_LISTENER,
                                 &prog);
        if (listener < 0)
                enter_fail("cannot install the final filter");

        /* From here on a call the filter refuses waits for the supervisor, which has no listener until this
         * message: nothing but the sendmsg() below (which the filter allows on this fd alone) and close().
         */
        ack.usec = now(CLOCK_MONOTONIC); /* vDSO */
        if (send_ack(&ack, listener) < 0)
                _exit(125); /* the parent is gone or the ack socket broken: nothing may run */
        (void) close(listener);
        (void) close(ENTER_FD_ACK);
        (void) unsetenv("LD_PRELOAD"); /* user code sees the environment the run was given */
}
