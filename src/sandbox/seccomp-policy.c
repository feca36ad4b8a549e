/* seccomp-policy: the rows common to both interpreters. Sources: ../shared/reference/syscalls.md (measured
 * on Debian 12's Python 3.11 and Node.js 20). Rows are sorted by name; every row gives its reason. */

#include <sys/ioctl.h>

#include "seccomp-policy.h"

/* clang-format off */
static const SyscallRule common_rules[] = {
        /* name                action            reason */
        { "access",            RULE_ALLOW,       "ld.so checks /etc/ld.so.preload; os.access() and fs.existsSync()" },
        { "arch_prctl",        RULE_STARTUP,     "ld.so sets the main thread's TLS (ARCH_SET_FS) before main" },
        { "brk",               RULE_ALLOW,       "glibc malloc heap" },
        { "chmod",             RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "clock_getres",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_gettime",     RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_nanosleep",   RULE_ALLOW,       "time.sleep() and timed waits" },
        { "clone",             RULE_THREAD_ONLY, "threads only: CLONE_THREAD must be set, so no new process" },
        { "clone3",            RULE_ENOSYS,      "seccomp cannot read its struct argument; glibc then uses clone" },
        { "close",             RULE_ALLOW,       "closing files, sockets and pipes" },
        { "dup3",              RULE_STARTUP,     "the enter library moves the code pipe to fd 3" },
        { "epoll_create1",     RULE_ALLOW,       "asyncio and libuv event loops" },
        { "epoll_ctl",         RULE_ALLOW,       "asyncio and libuv event loops" },
        { "execve",            RULE_STARTUP,     "exec of the interpreter itself; the final stage takes it away" },
        { "exit",              RULE_ALLOW,       "thread exit" },
        { "exit_group",        RULE_ALLOW,       "process exit" },
        { "fchmod",            RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "fcntl",             RULE_ALLOW,       "F_GETFD/F_GETFL/F_SETFD/F_DUPFD_CLOEXEC on the run's own fds" },
        { "fdatasync",         RULE_ALLOW,       "flushing files under /tmp (sqlite3, file APIs)" },
        { "fstatfs",           RULE_ALLOW,       "os.statvfs()/shutil.disk_usage() on the run's own mounts" },
        { "fsync",             RULE_ALLOW,       "flushing files under /tmp (sqlite3, file APIs)" },
        { "ftruncate",         RULE_ALLOW,       "truncating files under /tmp (sqlite3, file APIs)" },
        { "futex",             RULE_ALLOW,       "locks, condition variables, the GIL" },
        { "getcwd",            RULE_ALLOW,       "os.getcwd(), path resolution in both interpreters" },
        { "getdents64",        RULE_ALLOW,       "directory listings: importlib caches, os.listdir, fs.readdir" },
        { "getegid",           RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "geteuid",           RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "getgid",            RULE_ALLOW,       "site.py and libuv compare real and effective ids" },
        { "getpid",            RULE_ALLOW,       "os.getpid(), process.pid; the PID namespace holds only this run" },
        { "getppid",           RULE_ALLOW,       "os.getppid(); 0 inside the run's PID namespace" },
        { "getrandom",         RULE_ALLOW,       "malloc tcache key, hash seeds, os.urandom, crypto.randomBytes" },
        { "gettid",            RULE_ALLOW,       "thread ids" },
        { "gettimeofday",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "getuid",            RULE_ALLOW,       "site.py, pwd lookups of the run's own user" },
        { "ioctl",             RULE_IOCTL,       "isatty and socket queries only: see the ioctl table" },
        { "kill",              RULE_ALLOW,       "signals within the run: its PID namespace holds nothing else" },
        { "lseek",             RULE_ALLOW,       "file offsets: .pyc reads, io.open tell/seek" },
        { "madvise",           RULE_ALLOW,       "MADV_DONTNEED on freed thread stacks, MADV_HUGEPAGE for arrays" },
        { "mkdir",             RULE_ALLOW,       "tempfile.mkdtemp, fs.mkdirSync under /tmp; the root is read-only" },
        { "mmap",              RULE_ALLOW,       "memory allocation, ld.so and dlopen of extension modules" },
        { "mprotect",          RULE_ALLOW,       "RELRO, guard pages, and V8's JIT code pages" },
        { "mremap",            RULE_ALLOW,       "realloc() of large blocks" },
        { "munmap",            RULE_ALLOW,       "freeing memory" },
        { "nanosleep",         RULE_ALLOW,       "sleeps in libraries that do not use clock_nanosleep" },
        { "newfstatat",        RULE_ALLOW,       "stat() and fstat() (glibc 2.36 implements fstat with it)" },
        { "openat",            RULE_ALLOW,       "opening files: the read-only root and the run's /tmp" },
        { "poll",              RULE_ALLOW,       "waiting on the run's own fds (socket timeouts, resolver)" },
        { "pread64",           RULE_ALLOW,       "ld.so reads ELF headers; positional reads of the run's files" },
        { "prlimit64",         RULE_ALLOW,       "reads RLIMIT_STACK/NOFILE; hard limits cannot be raised without caps" },
        { "read",              RULE_ALLOW,       "code arrives on fd 3; imports read the runtime tree" },
        { "readlink",          RULE_ALLOW,       "getpath resolves the interpreter's symlink; realpath()" },
        { "rename",            RULE_ALLOW,       "os.rename, fs.renameSync under /tmp; the root is read-only" },
        { "rmdir",             RULE_ALLOW,       "shutil.rmtree, fs.rmSync under /tmp; the root is read-only" },
        { "rseq",              RULE_ALLOW,       "glibc registers restartable sequences per thread; refusing aborts" },
        { "rt_sigaction",      RULE_ALLOW,       "signal handlers (SIGINT, SIGPIPE ignored at start-up)" },
        { "rt_sigprocmask",    RULE_ALLOW,       "pthread_create blocks signals around clone" },
        { "rt_sigreturn",      RULE_ALLOW,       "return from any caught signal" },
        { "sched_getaffinity", RULE_ALLOW,       "CPU counts: OpenBLAS, libuv, pthread_getattr_np" },
        { "sched_yield",       RULE_ALLOW,       "OpenBLAS spin-waits; libuv yields at exit" },
        { "seccomp",           RULE_STARTUP,     "the enter library installs the final stage; gone after it" },
        { "set_robust_list",   RULE_ALLOW,       "glibc per-thread robust futex list" },
        { "set_tid_address",   RULE_STARTUP,     "glibc start-up" },
        { "sigaltstack",       RULE_ALLOW,       "alternate signal stacks (stack-overflow handlers)" },
        { "statfs",            RULE_ALLOW,       "os.statvfs() on the run's own mounts" },
        { "sysinfo",           RULE_ALLOW,       "glibc sysconf(_SC_PHYS_PAGES) at start-up" },
        { "tgkill",            RULE_ALLOW,       "raise() and abort(); only threads of this run are visible" },
        { "time",              RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "uname",             RULE_ALLOW,       "os.uname(), platform, V8 start-up; the UTS namespace is the run's" },
        { "unlink",            RULE_ALLOW,       "os.unlink, fs.unlinkSync under /tmp; the root is read-only" },
        { "unlinkat",          RULE_ALLOW,       "shutil.rmtree (fd-based) under /tmp" },
        { "utimensat",         RULE_ALLOW,       "os.utime, fs.utimes under /tmp; the root is read-only" },
        { "write",             RULE_ALLOW,       "stdout and stderr; files under /tmp" },
        { "writev",            RULE_ALLOW,       "glibc's fatal-error messages and buffered writers" },
};

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

static const char *const never_allow[] = {
        "acct", "add_key", "bpf", "chroot", "capset", "clock_adjtime", "clock_settime", "delete_module",
        "execve", "execveat", "fanotify_init", "finit_module", "fork", "fsconfig", "fsmount", "fsopen",
        "fspick", "init_module", "io_uring_enter", "io_uring_register", "io_uring_setup", "ioperm", "iopl",
        "kcmp", "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mount", "mount_setattr",
        "move_mount", "name_to_handle_at", "open_by_handle_at", "open_tree", "perf_event_open",
        "personality", "pidfd_getfd", "pivot_root", "process_madvise", "process_vm_readv",
        "process_vm_writev", "ptrace", "quotactl", "reboot", "request_key", "setdomainname", "setfsgid",
        "setfsuid", "setgid", "setgroups", "sethostname", "setns", "setregid", "setresgid", "setresuid",
        "setreuid", "settimeofday", "setuid", "swapoff", "swapon", "syslog", "umount2", "unshare",
        "uselib", "userfaultfd", "vfork", "vhangup",
};

const SyscallRule *seccomp_common_rules(size_t *ret_n) {
        *ret_n = sizeof(common_rules) / sizeof(common_rules[0]);
        return common_rules;
}

const IoctlRule *seccomp_ioctl_rules(size_t *ret_n) {
        *ret_n = sizeof(ioctl_rules) / sizeof(ioctl_rules[0]);
        return ioctl_rules;
}

const char *const *seccomp_never_allow(size_t *ret_n) {
        *ret_n = sizeof(never_allow) / sizeof(never_allow[0]);
        return never_allow;
}
