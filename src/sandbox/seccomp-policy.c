/* seccomp-policy: the rows common to both interpreters. Sources: ../shared/reference/syscalls.md (measured
 * on Debian 12's Python 3.11 and Node.js 20) and docs/syscalls-trixie.md (Debian 13's glibc 2.41, Python
 * 3.13 and Node.js 20.19 with its system libuv). Rows are sorted by name; every row gives its reason. */

#include "seccomp-policy.h"

#include <string.h>
#include <sys/ioctl.h>

/* clang-format off */
/* A row may leave out its last field, arch: RULE_ARCH_ALL is 0 (seccomp-policy.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const SyscallRule common_rules[] = {
        /* name                action            reason */
        { "access",            RULE_ALLOW,       "ld.so checks /etc/ld.so.preload; os.access() and fs.existsSync()", RULE_ARCH_X86_64 },
        { "alarm",             RULE_ALLOW,       "signal.alarm(): a timer for this process only", RULE_ARCH_X86_64 },
        { "arch_prctl",        RULE_STARTUP,     "ld.so sets the main thread's TLS (ARCH_SET_FS) before main", RULE_ARCH_X86_64 },
        { "brk",               RULE_ALLOW,       "glibc malloc heap" },
        { "chdir",             RULE_ALLOW,       "os.chdir(), process.chdir() inside the run's own root" },
        { "chmod",             RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only", RULE_ARCH_X86_64 },
        { "clock_getres",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_gettime",     RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_nanosleep",   RULE_ALLOW,       "time.sleep() and timed waits" },
        { "clone",             RULE_THREAD_ONLY, "threads only: CLONE_THREAD must be set, so no new process" },
        { "clone3",            RULE_ENOSYS,      "seccomp cannot read its struct argument; glibc then uses clone" },
        { "close",             RULE_ALLOW,       "closing files, sockets and pipes" },
        { "copy_file_range",   RULE_ALLOW,       "fs.copyFileSync() between the run's own files" },
        { "dup",               RULE_ALLOW,       "os.dup() of the run's own fds" },
        { "dup2",              RULE_ALLOW,       "os.dup2() of the run's own fds", RULE_ARCH_X86_64 },
        { "dup3",              RULE_ALLOW,       "os.dup2(inheritable=False); the enter library moves the code fd" },
        { "epoll_create1",     RULE_ALLOW,       "asyncio and libuv event loops" },
        { "epoll_ctl",         RULE_ALLOW,       "asyncio and libuv event loops" },
        { "execve",            RULE_STARTUP,     "exec of the interpreter itself; the final stage takes it away" },
        { "exit",              RULE_ALLOW,       "thread exit" },
        { "exit_group",        RULE_ALLOW,       "process exit" },
        { "faccessat",         RULE_ALLOW,       "os.access() with dir_fd; same as access" },
        { "faccessat2",        RULE_ALLOW,       "glibc's access() and faccessat() on newer kernels" },
        { "fadvise64",         RULE_ALLOW,       "os.posix_fadvise() on the run's own files" },
        { "fchdir",            RULE_ALLOW,       "os.fchdir() inside the run's own root" },
        { "fchmod",            RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "fchmodat",          RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "fcntl",             RULE_ALLOW,       "F_GETFD/F_GETFL/F_SETFD/F_DUPFD_CLOEXEC on the run's own fds" },
        { "fdatasync",         RULE_ALLOW,       "flushing files under /tmp (sqlite3, file APIs)" },
        { "flock",             RULE_ALLOW,       "file locks on the run's own files (sqlite3); nothing else is writable" },
        { "fstat",             RULE_ALLOW,       "fstat(): glibc 2.41 calls it directly (2.36 used newfstatat); libuv's fs.fstat" },
        { "fstatfs",           RULE_ENOSYS,      "fstatfs(open(\"/\")) would show the host disk under the tree; neither interpreter needs it" },
        { "fsync",             RULE_ALLOW,       "flushing files under /tmp (sqlite3, file APIs)" },
        { "ftruncate",         RULE_ALLOW,       "truncating files under /tmp (sqlite3, file APIs)" },
        { "futex",             RULE_ALLOW,       "locks, condition variables, the GIL" },
        { "getcwd",            RULE_ALLOW,       "os.getcwd(), path resolution in both interpreters" },
        { "getdents64",        RULE_ALLOW,       "directory listings: importlib caches, os.listdir, fs.readdir" },
        { "getegid",           RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "geteuid",           RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "getgid",            RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "getgroups",         RULE_ALLOW,       "os.getgroups(), id lookups: the run's supplementary groups are empty" },
        { "getitimer",         RULE_ALLOW,       "signal.getitimer(): this process's own timers" },
        { "getpgid",           RULE_ALLOW,       "getpgrp() on arm64 is getpgid(0); the PID namespace holds only this run" },
        { "getpgrp",           RULE_ALLOW,       "os.getpgrp(); the PID namespace holds only this run", RULE_ARCH_X86_64 },
        { "getpid",            RULE_ALLOW,       "os.getpid(), process.pid; the PID namespace holds only this run" },
        { "getppid",           RULE_ALLOW,       "os.getppid(); 0 inside the run's PID namespace" },
        { "getpriority",       RULE_ALLOW,       "os.getpriority(), os.nice(0) reads" },
        { "getrandom",         RULE_ALLOW,       "malloc tcache key, hash seeds, os.urandom, crypto.randomBytes" },
        { "getrusage",         RULE_ALLOW,       "resource.getrusage(), process.cpuUsage(): the run's own usage" },
        { "getsid",            RULE_ALLOW,       "os.getsid(); the PID namespace holds only this run" },
        { "gettid",            RULE_ALLOW,       "thread ids" },
        { "gettimeofday",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "getuid",            RULE_ALLOW,       "site.py, pwd lookups of the run's own user" },
        { "io_uring_setup",    RULE_ENOSYS,      "libuv 1.48+ probes it at start-up and falls back to epoll; never allowed" },
        { "ioctl",             RULE_IOCTL,       "isatty and socket queries only: see the ioctl table" },
        { "kill",              RULE_ALLOW,       "signals within the run: its PID namespace holds nothing else" },
        { "link",              RULE_ALLOW,       "os.link() under /tmp; hard links cannot leave a filesystem", RULE_ARCH_X86_64 },
        { "linkat",            RULE_ALLOW,       "os.link() with dir_fd under /tmp" },
        { "lseek",             RULE_ALLOW,       "file offsets: .pyc reads, io.open tell/seek" },
        { "madvise",           RULE_ALLOW,       "MADV_DONTNEED on freed thread stacks, MADV_HUGEPAGE for arrays" },
        { "mkdir",             RULE_ALLOW,       "tempfile.mkdtemp, fs.mkdirSync under /tmp; the root is read-only", RULE_ARCH_X86_64 },
        { "mkdirat",           RULE_ALLOW,       "os.mkdir() with dir_fd under /tmp; the root is read-only" },
        { "mmap",              RULE_ALLOW,       "memory allocation, ld.so and dlopen of extension modules" },
        { "mprotect",          RULE_ALLOW,       "RELRO, guard pages, and V8's JIT code pages" },
        { "mremap",            RULE_ALLOW,       "realloc() of large blocks" },
        { "munmap",            RULE_ALLOW,       "freeing memory" },
        { "nanosleep",         RULE_ALLOW,       "sleeps in libraries that do not use clock_nanosleep" },
        { "newfstatat",        RULE_ALLOW,       "stat() and fstat() (glibc 2.36 implements fstat with it)" },
        { "open",              RULE_ENOSYS,      "Python 3.13's mimalloc probes /proc/sys/vm/overcommit_memory with raw open(2) and keeps its default", RULE_ARCH_X86_64 },
        { "openat",            RULE_ALLOW,       "opening files: the read-only root and the run's /tmp" },
        { "poll",              RULE_ALLOW,       "waiting on the run's own fds (socket timeouts, resolver)", RULE_ARCH_X86_64 },
        { "ppoll",             RULE_ALLOW,       "waiting on the run's own fds" },
        { "pread64",           RULE_ALLOW,       "ld.so reads ELF headers; positional reads of the run's files" },
        { "prlimit64",         RULE_ALLOW,       "reads RLIMIT_STACK/NOFILE; hard limits cannot be raised without caps" },
        { "pselect6",          RULE_ALLOW,       "select.select() on the run's own fds" },
        { "pwrite64",          RULE_ALLOW,       "positional writes (sqlite3 files, os.pwrite, fs.writeSync) under /tmp" },
        { "read",              RULE_ALLOW,       "code arrives on fd 3; imports read the runtime tree" },
        { "readlink",          RULE_ALLOW,       "getpath resolves the interpreter's symlink; realpath()", RULE_ARCH_X86_64 },
        { "readlinkat",        RULE_ALLOW,       "os.readlink() with dir_fd" },
        { "rename",            RULE_ALLOW,       "os.rename, fs.renameSync under /tmp; the root is read-only", RULE_ARCH_X86_64 },
        { "renameat",          RULE_ALLOW,       "os.rename() with dir_fd under /tmp" },
        { "renameat2",         RULE_ALLOW,       "glibc's rename() on newer ports; under /tmp only" },
        { "rmdir",             RULE_ALLOW,       "shutil.rmtree, fs.rmSync under /tmp; the root is read-only", RULE_ARCH_X86_64 },
        { "rseq",              RULE_ALLOW,       "glibc registers restartable sequences per thread; refusing aborts" },
        { "rt_sigaction",      RULE_ALLOW,       "signal handlers (SIGINT, SIGPIPE ignored at start-up)" },
        { "rt_sigprocmask",    RULE_ALLOW,       "pthread_create blocks signals around clone" },
        { "rt_sigreturn",      RULE_ALLOW,       "return from any caught signal" },
        { "sched_getaffinity", RULE_ALLOW,       "CPU counts: OpenBLAS, libuv, pthread_getattr_np" },
        { "sched_getparam",    RULE_ALLOW,       "os.sched_getparam(): reads only" },
        { "sched_getscheduler", RULE_ALLOW,       "os.sched_getscheduler(): reads only" },
        { "sched_yield",       RULE_ALLOW,       "OpenBLAS spin-waits; libuv yields at exit" },
        { "seccomp",           RULE_STARTUP,     "the enter library installs the final stage; gone after it" },
        { "select",            RULE_ALLOW,       "select() of older libraries on the run's own fds", RULE_ARCH_X86_64 },
        { "sendfile",          RULE_ALLOW,       "shutil.copy() between the run's own files" },
        { "set_robust_list",   RULE_ALLOW,       "glibc per-thread robust futex list" },
        { "set_tid_address",   RULE_STARTUP,     "glibc start-up" },
        { "setitimer",         RULE_ALLOW,       "signal.setitimer(): timers for this process only" },
        { "sigaltstack",       RULE_ALLOW,       "alternate signal stacks (stack-overflow handlers)" },
        { "statfs",            RULE_ENOSYS,      "statfs(\"/\") would show the host disk under the tree; os.statvfs() fails cleanly" },
        { "symlink",           RULE_ALLOW,       "os.symlink() under /tmp; a link resolves inside the run's root", RULE_ARCH_X86_64 },
        { "symlinkat",         RULE_ALLOW,       "os.symlink() with dir_fd under /tmp" },
        { "sysinfo",           RULE_ENOSYS,      "host uptime, load and process count; glibc's sysconf and libuv cope" },
        { "tgkill",            RULE_ALLOW,       "raise() and abort(); only threads of this run are visible" },
        { "time",              RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read", RULE_ARCH_X86_64 },
        { "times",             RULE_ALLOW,       "os.times(): the run's own CPU times" },
        { "truncate",          RULE_ALLOW,       "os.truncate() of files under /tmp" },
        { "umask",             RULE_ALLOW,       "os.umask() (uuid1 and tempfile): this process's own mask" },
        { "uname",             RULE_ALLOW,       "os.uname(), platform, V8 start-up; the UTS namespace is the run's" },
        { "unlink",            RULE_ALLOW,       "os.unlink, fs.unlinkSync under /tmp; the root is read-only", RULE_ARCH_X86_64 },
        { "unlinkat",          RULE_ALLOW,       "shutil.rmtree (fd-based) under /tmp" },
        { "utimensat",         RULE_ALLOW,       "os.utime, fs.utimes under /tmp; the root is read-only" },
        { "write",             RULE_ALLOW,       "stdout and stderr; files under /tmp" },
        { "writev",            RULE_ALLOW,       "glibc's fatal-error messages and buffered writers" },
};
#pragma GCC diagnostic pop

static const IoctlRule ioctl_rules[] = {
        /* request     name          reason */
        { TCGETS,      "TCGETS",     "isatty() on stdio and every file io.open() opens (ENOTTY)" },
        { TIOCGWINSZ,  "TIOCGWINSZ", "terminal size queries (pandas), ENOTTY on the run's pipes" },
        { FIONBIO,     "FIONBIO",    "non-blocking sockets and pipes" },
        { FIONREAD,    "FIONREAD",   "bytes pending on a socket (glibc resolver)" },
        { FIOCLEX,     "FIOCLEX",    "close-on-exec for the script's fd" },
        { FIONCLEX,    "FIONCLEX",   "the inverse of FIOCLEX; only changes a flag of the run's own fd" },
};
/* clang-format on */

/* No configuration may allow these (DESIGN §3.7): config-file.c refuses them in allowed_syscalls with
 * the reason of their row, and seccomp.c kills them in every stage but execve at start-up. Sorted. */
/* clang-format off */
static const NeverAllowRule never_allow[] = {
        /* name               reason */
        { "acct",              "administers the host" },
        { "add_key",           "reaches the kernel keyrings" },
        { "bpf",               "loads programs into the kernel" },
        { "capset",            "changes capabilities" },
        { "chroot",            "changes the root directory" },
        { "clock_adjtime",     "changes the host's clock" },
        { "clock_settime",     "changes the host's clock" },
        { "delete_module",     "changes the running kernel" },
        { "execve",            "starts another program" },
        { "execveat",          "starts another program" },
        { "fanotify_init",     "watches whole filesystems" },
        { "finit_module",      "changes the running kernel" },
        { "fork",              "creates processes" },
        { "fsconfig",          "changes the mount tree" },
        { "fsmount",           "changes the mount tree" },
        { "fsopen",            "changes the mount tree" },
        { "fspick",            "changes the mount tree" },
        { "init_module",       "changes the running kernel" },
        { "io_uring_enter",    "io_uring works around seccomp" },
        { "io_uring_register", "io_uring works around seccomp" },
        { "io_uring_setup",    "io_uring works around seccomp" },
        { "ioperm",            "reaches hardware I/O ports" },
        { "iopl",              "reaches hardware I/O ports" },
        { "kcmp",              "inspects other processes" },
        { "kexec_file_load",   "replaces the running kernel" },
        { "kexec_load",        "replaces the running kernel" },
        { "keyctl",            "reaches the kernel keyrings" },
        { "lookup_dcookie",    "administers the host" },
        { "mount",             "changes the mount tree" },
        { "mount_setattr",     "changes the mount tree" },
        { "move_mount",        "changes the mount tree" },
        { "name_to_handle_at", "opens files around path checks" },
        { "open_by_handle_at", "opens files around path checks" },
        { "open_tree",         "changes the mount tree" },
        { "perf_event_open",   "exposes kernel and hardware internals" },
        { "personality",       "can turn off address space randomization" },
        { "pidfd_getfd",       "takes files from other processes" },
        { "pivot_root",        "changes the mount tree" },
        { "process_madvise",   "reaches into other processes" },
        { "process_vm_readv",  "reaches into other processes" },
        { "process_vm_writev", "reaches into other processes" },
        { "ptrace",            "reaches into other processes" },
        { "quotactl",          "administers the host" },
        { "reboot",            "administers the host" },
        { "request_key",       "reaches the kernel keyrings" },
        { "setdomainname",     "administers the host" },
        { "setfsgid",          "changes credentials" },
        { "setfsuid",          "changes credentials" },
        { "setgid",            "changes credentials" },
        { "setgroups",         "changes credentials" },
        { "sethostname",       "administers the host" },
        { "setns",             "enters other namespaces" },
        { "setregid",          "changes credentials" },
        { "setresgid",         "changes credentials" },
        { "setresuid",         "changes credentials" },
        { "setreuid",          "changes credentials" },
        { "settimeofday",      "changes the host's clock" },
        { "setuid",            "changes credentials" },
        { "swapoff",           "administers the host" },
        { "swapon",            "administers the host" },
        { "syslog",            "reads the kernel log" },
        { "umount2",           "changes the mount tree" },
        { "unshare",           "creates namespaces" },
        { "uselib",            "loads libraries the obsolete way" },
        { "userfaultfd",       "widens kernel race windows" },
        { "vfork",             "creates processes" },
        { "vhangup",           "administers the host" },
};
/* clang-format on */

const SyscallRule *seccomp_common_rules(size_t *ret_n) {
        *ret_n = sizeof(common_rules) / sizeof(common_rules[0]);
        return common_rules;
}

const IoctlRule *seccomp_ioctl_rules(size_t *ret_n) {
        *ret_n = sizeof(ioctl_rules) / sizeof(ioctl_rules[0]);
        return ioctl_rules;
}

const NeverAllowRule *seccomp_never_allow(size_t *ret_n) {
        *ret_n = sizeof(never_allow) / sizeof(never_allow[0]);
        return never_allow;
}

const char *seccomp_never_allow_reason(const char *name) {
        for (size_t i = 0; i < sizeof(never_allow) / sizeof(never_allow[0]); i++)
                if (strcmp(never_allow[i].name, name) == 0)
                        return never_allow[i].reason;
        return NULL;
}
