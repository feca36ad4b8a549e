/* worker-filter: see worker-filter.h. */

#include "worker-filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "common/cleanup.h"
#include "worker/connslot.h"

/* Allowed whatever their arguments. Names absent from this architecture are skipped (aarch64 has no
 * poll, open or stat, only their *at and p* forms). */
static const char *const allowed[] = {
        /* its connection, the runner's line, journald and the system bus (write, writev below: not to the
         * connection slots file; no pwrite: no worker writes at an offset) */
        "read",
        "readv",
        "pread64",
        "recvfrom",
        "recvmsg",
        "sendto",
        "sendmsg",
        "shutdown",
        "close",
        "connect",
        "getsockopt",
        "setsockopt",
        "getsockname",
        "getpeername",
        /* waiting for them */
        "poll",
        "ppoll",
        "select",
        "pselect6",
        "epoll_create",
        "epoll_create1",
        "epoll_ctl",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "eventfd2",
        "pipe2",
        "timerfd_create",
        "timerfd_settime",
        "timerfd_gettime",
        /* memory (mmap and mprotect below, without PROT_EXEC) */
        "brk",
        "munmap",
        "mremap",
        "madvise",
        /* a run's code goes to the runner in a sealed memfd, written with write() (fcntl below); nothing
         * of a worker's resizes a file, so ftruncate is refused whatever the fd */
        "memfd_create",
        /* files it reads: the shared stats, /dev/null, what libraries look up */
        "fstat",
        "newfstatat",
        "statx",
        "stat",
        "lstat",
        "lseek",
        "access",
        "faccessat",
        "faccessat2",
        "readlink",
        "readlinkat",
        "getdents64",
        /* time */
        "clock_gettime",
        "clock_getres",
        "clock_nanosleep",
        "nanosleep",
        "gettimeofday",
        "time",
        /* signals; kill and tgkill below, to itself only */
        "rt_sigaction",
        "rt_sigprocmask",
        "rt_sigreturn",
        "sigaltstack",
        /* who and where it is; its threads' bookkeeping in glibc; the end */
        "getpid",
        "gettid",
        "getppid",
        "getuid",
        "geteuid",
        "getgid",
        "getegid",
        "getresuid",
        "getresgid",
        "getgroups",
        "uname",
        "getrlimit",
        "sched_getaffinity",
        "sched_yield",
        "futex",
        "set_robust_list",
        "rseq",
        "restart_syscall",
        "getrandom",
        "exit",
        "exit_group",
};

static int allow(scmp_filter_ctx ctx, const char *name, unsigned n_args, const struct scmp_arg_cmp *args) {
        int nr = seccomp_syscall_resolve_name(name);

        if (nr < 0) /* unknown here, or a pseudo-number for one this architecture lacks */
                return 0;
        return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n_args, args);
}

/* Calls that write to, lock or duplicate a file descriptor: only below CONNSLOT_FD. The worker
 * keeps its connection slots file there (connslot.h), open for writing, and nothing else: so none of
 * these reaches it, and it stays as it was made, 0 bytes in /run holding its slot's lock. Every other fd
 * a worker holds is below: its connection, its line to the runner, journald's stream (fd 2 under systemd),
 * the memfds it makes. The comparison is of all 64 bits (the kernel reads an fd as its low 32), so a
 * number with high bits set is refused too. */
static const struct scmp_arg_cmp below_slot_fd = SCMP_A0(SCMP_CMP_LT, CONNSLOT_FD);

/* The fcntl() commands a serving worker makes: its connection's flags and duplicate (http.c,
 * libmicrohttpd), the seals of the memfds to and from the runner (runner-protocol.c). No lock command:
 * its slot was locked before the filter (connslot_take()), and seccomp cannot read a struct flock to
 * tell its slot's byte from another's, so F_SETLK, F_OFD_SETLK and the rest are refused outright. */
static const int fcntl_commands[] = {
        F_ADD_SEALS, F_DUPFD_CLOEXEC, F_GETFD, F_GETFL, F_GET_SEALS, F_SETFD, F_SETFL,
};

static int allow_with_arguments(scmp_filter_ctx ctx, scmp_datum_t self) {
        int r;

        /* Sockets of AF_UNIX only: it never opens a network connection (RestrictAddressFamilies=). */
        r = allow(ctx, "socket", 1, (const struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_EQ, AF_UNIX) });
        if (r < 0)
                return r;
        /* Writes to its sockets, memfds and stderr: never the slots file (below_slot_fd). */
        static const char *const fd_calls[] = { "write", "writev", "dup", "dup3" };
        for (size_t i = 0; i < ELEMENTSOF(fd_calls); i++) {
                r = allow(ctx, fd_calls[i], 1, &below_slot_fd);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(fcntl_commands); i++) {
                r = allow(ctx, "fcntl", 2,
                          (const struct scmp_arg_cmp[]){
                                  below_slot_fd,
                                  SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) fcntl_commands[i]),
                          });
                if (r < 0)
                        return r;
        }
        /* No executable mapping once the libraries are in (MemoryDenyWriteExecute=, and more); of a file,
         * only one below CONNSLOT_FD (the shared stats, read-only), so not even a shared writable mapping
         * of the slots file (which could not grow it: a store past its end is SIGBUS). */
        r = allow(
                ctx, "mmap", 2,
                (const struct scmp_arg_cmp[]){ SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
                                               SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS) });
        if (r < 0)
                return r;
        r = allow(ctx, "mmap", 2,
                  (const struct scmp_arg_cmp[]){ SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
                                                 SCMP_A4(SCMP_CMP_LT, CONNSLOT_FD) });
        if (r < 0)
                return r;
        r = allow(ctx, "mprotect", 1,
                  (const struct scmp_arg_cmp[]){ SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0) });
        if (r < 0)
                return r;
        /* Opens for reading only: nothing to create or write (the stats are the runner's). */
        const scmp_datum_t writing =
                O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | (O_TMPFILE & ~O_DIRECTORY);
        r = allow(ctx, "openat", 1,
                  (const struct scmp_arg_cmp[]){ SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0) });
        if (r < 0)
                return r;
        r = allow(ctx, "open", 1, (const struct scmp_arg_cmp[]){ SCMP_A1(SCMP_CMP_MASKED_EQ, writing, 0) });
        if (r < 0)
                return r;
        /* Signals to itself (abort(), raise()): every worker has the same user, and one must not reach
         * another. It never forks after this, so its PID is known when the filter is loaded: compiled, the
         * rule holds PID_PLACEHOLDER, which worker_filter_load() replaces. */
        r = allow(ctx, "kill", 1, (const struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_EQ, self) });
        if (r < 0)
                return r;
        r = allow(ctx, "tgkill", 1, (const struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_EQ, self) });
        if (r < 0)
                return r;
        /* How much a client has sent (http.c), and nothing else of ioctl's many powers. */
        r = allow(ctx, "ioctl", 1, (const struct scmp_arg_cmp[]){ SCMP_A1(SCMP_CMP_EQ, FIONREAD) });
        if (r < 0)
                return r;
        /* Shared locks only: a dependency generation is read under LOCK_SH (generation.c), so that it
         * is not collected meanwhile; an exclusive one would hold up the runner and the manager. */
        static const int lock_ops[] = { LOCK_SH, LOCK_SH | LOCK_NB, LOCK_UN };
        for (size_t i = 0; i < ELEMENTSOF(lock_ops); i++) {
                r = allow(ctx, "flock", 1,
                          (const struct scmp_arg_cmp[]){ SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) lock_ops[i]) });
                if (r < 0)
                        return r;
        }
        /* Reading its limits (glibc's sysconf()), never setting them. */
        return allow(ctx, "prlimit64", 2,
                     (const struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0) });
}

/* Above any PID the kernel hands out (PID_MAX_LIMIT is 2^22), and no constant the rest of the filter
 * compares with (system call numbers, flags, the architecture's AUDIT_ARCH value). */
#define PID_PLACEHOLDER UINT32_C(0x7ffffff5)

/* The instructions that compare the first argument with PID_PLACEHOLDER: libseccomp compares a 64-bit
 * argument as two 32-bit halves, and the low one is the PID's. */
static bool is_pid_comparison(const struct sock_filter *insn) {
        return BPF_CLASS(insn->code) == BPF_JMP && BPF_OP(insn->code) == BPF_JEQ &&
               BPF_SRC(insn->code) == BPF_K && insn->k == PID_PLACEHOLDER;
}

int worker_filter_compile(SeccompProgram **ret) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
        unsigned pid_comparisons = 0;
        int r;

        ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        /* Another architecture's system call numbers mean other calls: kill, never let them through. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0) /* libseccomp cannot tell that the kernel has it (a filter above denies seccomp()): the
                    * worker has one thread, so killing the thread is killing the process */
                r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                r = allow(ctx, allowed[i], 0, NULL);
                if (r < 0)
                        return r;
        }
        r = allow_with_arguments(ctx, PID_PLACEHOLDER);
        if (r < 0)
                return r;
        r = seccomp_program_export(ctx, &p);
        if (r < 0)
                return r;
        /* Fail closed: a libseccomp that compiled the rules otherwise would leave a rule unpatched. One
         * comparison at least: libseccomp shares one block between kill and tgkill, whose arguments are
         * compared alike. */
        for (unsigned short i = 0; i < p->prog.len; i++) {
                if (is_pid_comparison(&p->prog.filter[i]))
                        pid_comparisons++;
                else if (p->prog.filter[i].k == PID_PLACEHOLDER)
                        return -EBADMSG;
        }
        if (pid_comparisons == 0)
                return -EBADMSG;
        *ret = TAKE_PTR(p);
        return 0;
}

int worker_filter_load(const SeccompProgram *p) {
        const size_t size = p->prog.len * sizeof(struct sock_filter);
        _cleanup_free_ struct sock_filter *insns = malloc(size);
        const uint32_t self = (uint32_t) getpid();

        if (!insns)
                return -ENOMEM;
        memcpy(insns, p->prog.filter, size);
        for (unsigned short i = 0; i < p->prog.len; i++)
                if (is_pid_comparison(&insns[i]))
                        insns[i].k = self;

        /* Non-dumpable: every worker has the same UID, and a dumpable one lets another (taken over by
         * its client) open its /proc/PID/mem and environ and read its clients' code, results and API key.
         * It also hands those /proc files to root and turns off its core dumps. Last, as setuid() and
         * execve() set it back; the filter then denies prctl(), so nothing sets it back later. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return -errno;
        /* As libseccomp's seccomp_load() does (SCMP_FLTATR_CTL_NNP's default): an unprivileged process
         * may load a filter only so. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return seccomp_install(&(SeccompProgram){ .prog = { .len = p->prog.len, .filter = insns } });
}

int worker_file_size_limit(uint64_t code_max) {
        const uint64_t limit = code_max + (UINT64_C(1) << 20);
        struct stat st;

        for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
                if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
                        return 0;
        if (setrlimit(RLIMIT_FSIZE, &(struct rlimit){ (rlim_t) limit, (rlim_t) limit }) < 0)
                return -errno;
        return 1;
}

int worker_filter_apply(void) {
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
        int r;

        r = worker_filter_compile(&p);
        if (r < 0)
                return r;
        return worker_filter_load(p);
}
