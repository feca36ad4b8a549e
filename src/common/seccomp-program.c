/* seccomp-program: see seccomp-program.h. */

#include "seccomp-program.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int seccomp_program_export(scmp_filter_ctx ctx, SeccompProgram **ret) {
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        /* A binary search on the system call number rather than libseccomp's default chain of one test per
         * rule. The kernel runs every call's number through a new filter when it is installed, to cache
         * the calls it always allows (seccomp_cache_prepare(), under the sighand lock): along a chain of
         * some 200 instructions that took 0.10-0.18 ms per filter, three per run (the worker's, the run's
         * two stages), and 0.02-0.05 ms along a tree (docs/performance.md, build/bench-seccomp-install).
         * The calls the cache cannot hold, those whose arguments are compared, take the short path too,
         * each time they are made. The rules, and so what each call gets, do not change. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r < 0)
                return r;

        fd = memfd_create("difysandbox-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
            st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return -E2BIG;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->prog.len = (unsigned short) (st.st_size / sizeof(struct sock_filter));
        p->prog.filter = malloc((size_t) st.st_size);
        if (!p->prog.filter)
                return -ENOMEM;
        if (pread(fd, p->prog.filter, (size_t) st.st_size, 0) != st.st_size)
                return -EIO;

        *ret = TAKE_PTR(p);
        return 0;
}

SeccompProgram *seccomp_program_free(SeccompProgram *p) {
        if (p) {
                free(p->prog.filter);
                free(p);
        }
        return NULL;
}

int seccomp_install(const SeccompProgram *p) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->prog) == 0)
                return 0;
        /* A filter already in force may deny seccomp() and allow prctl(): systemd's SystemCallFilter=
         * @system-service does, in a drop-in an operator may add to a unit. prctl() installs the same
         * filter (libseccomp's seccomp_load() falls back to it too); if it fails as well, so do we. */
        if (errno != EPERM && errno != ENOSYS)
                return -errno;
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p->prog, 0, 0) < 0)
                return -errno;
        return 0;
}
