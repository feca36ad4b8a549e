/* worker-filter: see worker-filter.h. */

#include "worker-filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "common/cleanup.h"

/* Allowed whatever their arguments. Names absent from this architecture are skipped (aarch64 has no
 * poll, open or stat, only their *at and p* forms). */
static const char *const allowed[] = {
        /* its connection, the runner's line, journald and the system bus */
        "read",
        "readv",
        "pread64",
        "write",
        "writev",
        "pwrite64",
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
        /* a run's code goes to the runner in a sealed memfd */
        "memfd_create",
        "ftruncate",
        "fcntl",
        "dup",
        "dup3",
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

static int allow_with_arguments(scmp_filter_ctx ctx, scmp_datum_t self) {
        int r;

        /* Sockets of AF_UNIX only: it never opens a network connection (RestrictAddressFamilies=). */
        r = allow(ctx, "socket", 1, (const struct scmp_arg_cmp[]){ SCMP_A0(SCMP_CMP_EQ, AF_UNIX) });
        if (r < 0)
                return r;
        /* No executable mapping once the libraries are in (MemoryDenyWriteExecute=, and more). */
        r = allow(ctx, "mmap", 1,
                  (const struct scmp_arg_cmp[]){ SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0) });
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

DEFINE_POINTER_CLEANUP(scmp_filter_ctx, seccomp_release);

struct WorkerFilter {
        struct sock_filter insns[BPF_MAXINSNS];
        unsigned short len;
};

/* Above any PID the kernel hands out (PID_MAX_LIMIT is 2^22), and no constant the rest of the filter
 * compares with (system call numbers, flags, the architecture's AUDIT_ARCH value). */
#define PID_PLACEHOLDER UINT32_C(0x7ffffff5)

/* The instructions that compare the first argument with PID_PLACEHOLDER: libseccomp compares a 64-bit
 * argument as two 32-bit halves, and the low one is the PID's. */
static bool is_pid_comparison(const struct sock_filter *insn) {
        return BPF_CLASS(insn->code) == BPF_JMP && BPF_OP(insn->code) == BPF_JEQ &&
               BPF_SRC(insn->code) == BPF_K && insn->k == PID_PLACEHOLDER;
}

static int export_program(scmp_filter_ctx ctx, WorkerFilter *f) {
        _cleanup_close_ int fd = memfd_create("worker-filter", MFD_CLOEXEC);
        ssize_t n;
        int r;

        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        n = pread(fd, f->insns, sizeof(f->insns), 0);
        if (n < 0)
                return -errno;
        if (n == 0 || (size_t) n % sizeof(struct sock_filter) != 0)
                return -EBADMSG;
        f->len = (unsigned short) ((size_t) n / sizeof(struct sock_filter));
        return 0;
}

int worker_filter_compile(WorkerFilter **ret) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        _cleanup_free_ WorkerFilter *f = NULL;
        unsigned pid_comparisons = 0;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
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
        r = export_program(ctx, f);
        if (r < 0)
                return r;
        /* Fail closed: a libseccomp that compiled the rules otherwise would leave a rule unpatched. One
         * comparison at least: libseccomp shares one block between kill and tgkill, whose arguments are
         * compared alike. */
        for (unsigned short i = 0; i < f->len; i++) {
                if (is_pid_comparison(&f->insns[i]))
                        pid_comparisons++;
                else if (f->insns[i].k == PID_PLACEHOLDER)
                        return -EBADMSG;
        }
        if (pid_comparisons == 0)
                return -EBADMSG;
        *ret = TAKE_PTR(f);
        return 0;
}

WorkerFilter *worker_filter_free(WorkerFilter *f) {
        free(f);
        return NULL;
}

int worker_filter_load(const WorkerFilter *f) {
        _cleanup_free_ struct sock_filter *insns = NULL;
        const uint32_t self = (uint32_t) getpid();
        struct sock_fprog prog;

        insns = malloc(f->len * sizeof(struct sock_filter));
        if (!insns)
                return -ENOMEM;
        memcpy(insns, f->insns, f->len * sizeof(struct sock_filter));
        for (unsigned short i = 0; i < f->len; i++)
                if (is_pid_comparison(&insns[i]))
                        insns[i].k = self;
        prog = (struct sock_fprog){ .len = f->len, .filter = insns };

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
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return -errno;
        return 0;
}

int worker_filter_apply(void) {
        _cleanup_(worker_filter_freep) WorkerFilter *f = NULL;
        int r;

        r = worker_filter_compile(&f);
        if (r < 0)
                return r;
        return worker_filter_load(f);
}
