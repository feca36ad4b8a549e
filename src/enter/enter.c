/* enter: the final seccomp stage, preloaded into the interpreter (LD_PRELOAD). Its constructor runs after
 * ld.so has loaded the interpreter's libraries and before main(), so the interpreter's start-up is done
 * under the wider exec stage and everything after it, user code included, under the final one. It uses
 * no libc allocation and no libseccomp: the filter arrives compiled (enter-protocol.h). */

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/time-util.h"
#include "enter-protocol.h"

static void enter_fail(const char *what) {
        static const char prefix[] = "difysandbox-enter: ";
        (void) !write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
        (void) !write(STDERR_FILENO, what, strlen(what));
        (void) !write(STDERR_FILENO, "\n", 1);
        _exit(125); /* no ack was sent: the parent reports a sandbox failure */
}

__attribute__((constructor)) static void enter_final_stage(void) {
        static struct sock_filter filter[BPF_MAXINSNS];
        struct sock_fprog prog;
        size_t size = 0;
        EnterAck ack = { .tag = ENTER_ACK };

        for (;;) {
                ssize_t n = read(ENTER_FD_FILTER, (char *) filter + size, sizeof(filter) - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        enter_fail("cannot read the final filter");
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size == sizeof(filter))
                        enter_fail("final filter too large");
        }
        if (size == 0 || size % sizeof(struct sock_filter) != 0)
                enter_fail("final filter malformed");
        (void) close(ENTER_FD_FILTER);

        /* The code fd goes where the interpreter reads it before the filter, so that the filter is the last
         * step before the ack (the final stage allows dup3 too, for os.dup2()). */
        if (dup3(ENTER_FD_CODE, CODE_FD, O_CLOEXEC) != CODE_FD)
                enter_fail("cannot move the code fd");
        (void) close(ENTER_FD_CODE);

        prog = (struct sock_fprog){ .len = (unsigned short) (size / sizeof(struct sock_filter)),
                                    .filter = filter };
        /* TSYNC: should the interpreter ever start a thread before main, it gets the filter too. */
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
                enter_fail("cannot install the final filter");

        ack.usec = now(CLOCK_MONOTONIC); /* vDSO */
        if (write(ENTER_FD_ACK, &ack, sizeof(ack)) != (ssize_t) sizeof(ack))
                _exit(125); /* the parent is gone or the ack pipe broken: nothing may run */
        (void) close(ENTER_FD_ACK);
        (void) unsetenv("LD_PRELOAD"); /* user code sees the environment the run was given */
}
