/* seccomp-policy: the rows common to both interpreters. Sources: ../shared/reference/syscalls.md (measured
 * on Debian 12's Python 3.11 and Node.js 20) and docs/syscalls-trixie.md (Debian 13's glibc 2.41, Python
 * 3.13 and Node.js 20.19 with its system libuv). Rows are sorted by name; every row gives its reason. */

#include "seccomp-policy.h"

#include <errno.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

/* clang-format off */
/* A row may leave out its last field, arch: RULE_ARCH_ALL is 0 (seccomp-policy.h). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const SyscallRule common_rules[] = {
        /* name                action            reason */
        { "accept",            RULE_NETWORK,     "a server on the run's own loopback (http.server in a thread); its netns holds only the run" },
        { "accept4",           RULE_NETWORK,     "as accept, with flags (asyncio, libuv servers)" },
        { "access",            RULE_ALLOW,       "ld.so checks /etc/ld.so.preload; os.access() and fs.existsSync()", RULE_ARCH_X86_64 },
        { "alarm",             RULE_ALLOW,       "signal.alarm(): a timer for this process only", RULE_ARCH_X86_64 },
        { "arch_prctl",        RULE_STARTUP,     "ld.so sets the main thread's TLS (ARCH_SET_FS) before main", RULE_ARCH_X86_64 },
        { "brk",               RULE_ALLOW,       "glibc malloc heap" },
        { "chdir",             RULE_ALLOW,       "os.chdir(), process.chdir() inside the run's own root" },
        { "chmod",             RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only", RULE_ARCH_X86_64 },
        { "chown",             RULE_ALLOW,       "shutil.chown(), copystat: without CAP_CHOWN a run can only keep its own UID and groups", RULE_ARCH_X86_64 },
        { "clock_getres",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_gettime",     RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "clock_nanosleep",   RULE_ALLOW,       "time.sleep() and timed waits" },
        { "clone",             RULE_THREAD_ONLY, "threads only: CLONE_THREAD must be set, so no new process" },
        { "clone3",            RULE_ENOSYS,      "seccomp cannot read its struct argument; glibc then uses clone" },
        { "close",             RULE_ALLOW,       "closing files, sockets and pipes" },
        { "close_range",       RULE_ALLOW,       "os.closerange(): closes only the run's own fds" },
        { "copy_file_range",   RULE_ALLOW,       "fs.copyFileSync() between the run's own files" },
        { "dup",               RULE_ALLOW,       "os.dup() of the run's own fds" },
        { "dup2",              RULE_ALLOW,       "os.dup2() of the run's own fds", RULE_ARCH_X86_64 },
        { "dup3",              RULE_ALLOW,       "os.dup2(inheritable=False); the enter library moves the code fd" },
        { "epoll_create1",     RULE_ALLOW,       "asyncio and libuv event loops" },
        { "epoll_ctl",         RULE_ALLOW,       "asyncio and libuv event loops" },
        { "eventfd",           RULE_ALLOW,       "event counters of older libraries; a counter in the run's own memory", RULE_ARCH_X86_64 },
        { "eventfd2",          RULE_ALLOW,       "libuv async handles, asyncio in some libraries: a counter in the run's own memory" },
        { "execve",            RULE_STARTUP,     "exec of the interpreter itself; the final stage takes it away" },
        { "exit",              RULE_ALLOW,       "thread exit" },
        { "exit_group",        RULE_ALLOW,       "process exit" },
        { "faccessat",         RULE_ALLOW,       "os.access() with dir_fd; same as access" },
        { "faccessat2",        RULE_ALLOW,       "glibc's access() and faccessat() on newer kernels" },
        { "fadvise64",         RULE_ALLOW,       "os.posix_fadvise() on the run's own files" },
        { "fchdir",            RULE_ALLOW,       "os.fchdir() inside the run's own root" },
        { "fchmod",            RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "fchmodat",          RULE_ALLOW,       "file modes under the run's own /tmp; the rest of the root is read-only" },
        { "fchown",            RULE_ALLOW,       "libuv's fs.copyFile copies the owner; without CAP_CHOWN only the run's own UID" },
        { "fchownat",          RULE_ALLOW,       "os.chown() with dir_fd; without CAP_CHOWN only the run's own UID" },
        { "fcntl",             RULE_ALLOW,       "F_GETFD/F_GETFL/F_SETFD/F_DUPFD_CLOEXEC on the run's own fds" },
        { "fdatasync",         RULE_ALLOW,       "flushing files under /tmp (sqlite3, file APIs)" },
        { "fgetxattr",         RULE_ALLOW,       "xattr reads (shutil.copy2); reads only, of files the run can read" },
        { "flistxattr",        RULE_ALLOW,       "shutil.copy2/copystat list xattrs first; reads only" },
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
        { "getresgid",         RULE_ALLOW,       "os.getresgid(): reads only" },
        { "getresuid",         RULE_ALLOW,       "os.getresuid(): reads only" },
        { "getrusage",         RULE_ALLOW,       "resource.getrusage(), process.cpuUsage(): the run's own usage" },
        { "getsid",            RULE_ALLOW,       "os.getsid(); the PID namespace holds only this run" },
        { "gettid",            RULE_ALLOW,       "thread ids" },
        { "gettimeofday",      RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read" },
        { "getuid",            RULE_ALLOW,       "site.py, pwd lookups of the run's own user" },
        { "getxattr",          RULE_ALLOW,       "xattr reads (shutil.copy2, os.getxattr); reads only, of files the run can read" },
        { "inotify_add_watch", RULE_ALLOW,       "fs.watch(), watchdog: watches on the run's own root; counted per UID, and each run has its own" },
        { "inotify_init",      RULE_ALLOW,       "as inotify_init1, the old call", RULE_ARCH_X86_64 },
        { "inotify_init1",     RULE_ALLOW,       "fs.watch(), watchdog: an inotify instance of the run's own" },
        { "inotify_rm_watch",  RULE_ALLOW,       "removes the run's own watches" },
        { "io_uring_setup",    RULE_ENOSYS,      "libuv 1.48+ probes it at start-up and falls back to epoll; never allowed" },
        { "ioctl",             RULE_IOCTL,       "isatty and socket queries only: see the ioctl table" },
        { "kill",              RULE_ALLOW,       "signals within the run: its PID namespace holds nothing else" },
        { "lchown",            RULE_ALLOW,       "os.lchown(): without CAP_CHOWN only the run's own UID", RULE_ARCH_X86_64 },
        { "lgetxattr",         RULE_ALLOW,       "xattr reads of symlinks (shutil.copy2 follow_symlinks=False); reads only" },
        { "link",              RULE_ALLOW,       "os.link() under /tmp; hard links cannot leave a filesystem", RULE_ARCH_X86_64 },
        { "linkat",            RULE_ALLOW,       "os.link() with dir_fd under /tmp" },
        { "listen",            RULE_NETWORK,     "a server on the run's own loopback; nothing outside its netns reaches it" },
        { "listxattr",         RULE_ALLOW,       "shutil.copy2/copytree list xattrs first; reads only" },
        { "llistxattr",        RULE_ALLOW,       "as listxattr, of a symlink; reads only" },
        { "lseek",             RULE_ALLOW,       "file offsets: .pyc reads, io.open tell/seek" },
        { "madvise",           RULE_ALLOW,       "MADV_DONTNEED on freed thread stacks, MADV_HUGEPAGE for arrays" },
        { "memfd_create",      RULE_ALLOW,       "anonymous memory files: counted in the run's memory limit, and nothing can exec them" },
        { "mkdir",             RULE_ALLOW,       "tempfile.mkdtemp, fs.mkdirSync under /tmp; the root is read-only", RULE_ARCH_X86_64 },
        { "mkdirat",           RULE_ALLOW,       "os.mkdir() with dir_fd under /tmp; the root is read-only" },
        { "mmap",              RULE_ALLOW,       "memory allocation, ld.so and dlopen of extension modules" },
        { "mprotect",          RULE_ALLOW,       "RELRO, guard pages, and V8's JIT code pages" },
        { "mremap",            RULE_ALLOW,       "realloc() of large blocks" },
        { "msync",             RULE_ALLOW,       "mmap.flush(), numpy.memmap.flush(): writes back the run's own mappings" },
        { "munmap",            RULE_ALLOW,       "freeing memory" },
        { "nanosleep",         RULE_ALLOW,       "sleeps in libraries that do not use clock_nanosleep" },
        { "newfstatat",        RULE_ALLOW,       "stat() and fstat() (glibc 2.36 implements fstat with it)" },
        { "open",              RULE_ENOSYS,      "Python 3.13's mimalloc probes /proc/sys/vm/overcommit_memory with raw open(2) and keeps its default", RULE_ARCH_X86_64 },
        { "openat",            RULE_ALLOW,       "opening files: the read-only root and the run's /tmp" },
        { "pipe",              RULE_ALLOW,       "pipes within the run (older libraries)", RULE_ARCH_X86_64 },
        { "pipe2",             RULE_ALLOW,       "pipes within the run: multiprocessing.pool.ThreadPool, libuv wake-ups, subprocess's error pipe" },
        { "poll",              RULE_ALLOW,       "waiting on the run's own fds (socket timeouts, resolver)", RULE_ARCH_X86_64 },
        { "ppoll",             RULE_ALLOW,       "waiting on the run's own fds" },
        { "prctl",             RULE_PRCTL,       "thread names only: see the prctl table" },
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
        { "sched_get_priority_max", RULE_ALLOW,       "os.sched_get_priority_max(): reads only" },
        { "sched_get_priority_min", RULE_ALLOW,       "os.sched_get_priority_min(): reads only" },
        { "sched_getaffinity", RULE_ALLOW,       "CPU counts: OpenBLAS, libuv, pthread_getattr_np" },
        { "sched_getparam",    RULE_ALLOW,       "os.sched_getparam(): reads only" },
        { "sched_getscheduler", RULE_ALLOW,       "os.sched_getscheduler(): reads only" },
        { "sched_setaffinity", RULE_ALLOW,       "os.sched_setaffinity(): only the run's own threads (PID namespace), within the CPUs its cgroup allows" },
        { "sched_yield",       RULE_ALLOW,       "OpenBLAS spin-waits; libuv yields at exit" },
        { "seccomp",           RULE_STARTUP,     "the enter library installs the final stage; gone after it" },
        { "select",            RULE_ALLOW,       "select() of older libraries on the run's own fds", RULE_ARCH_X86_64 },
        { "sendfile",          RULE_ALLOW,       "shutil.copy() between the run's own files" },
        { "set_robust_list",   RULE_ALLOW,       "glibc per-thread robust futex list" },
        { "set_tid_address",   RULE_STARTUP,     "glibc start-up" },
        { "setitimer",         RULE_ALLOW,       "signal.setitimer(): timers for this process only" },
        { "setpriority",       RULE_ALLOW,       "os.nice(): raising niceness only (lowering needs CAP_SYS_NICE); only the run's own processes and UID" },
        { "sigaltstack",       RULE_ALLOW,       "alternate signal stacks (stack-overflow handlers)" },
        { "statfs",            RULE_ENOSYS,      "statfs(\"/\") would show the host disk under the tree; os.statvfs() fails cleanly" },
        { "statx",             RULE_ALLOW,       "stat() of libuv and Rust-built wheels (orjson, polars, pydantic-core)" },
        { "symlink",           RULE_ALLOW,       "os.symlink() under /tmp; a link resolves inside the run's root", RULE_ARCH_X86_64 },
        { "symlinkat",         RULE_ALLOW,       "os.symlink() with dir_fd under /tmp" },
        { "sysinfo",           RULE_ENOSYS,      "host uptime, load and process count; glibc's sysconf and libuv cope" },
        { "tgkill",            RULE_ALLOW,       "raise() and abort(); only threads of this run are visible" },
        { "time",              RULE_ALLOW,       "time: vDSO fallback on clocksources the vDSO cannot read", RULE_ARCH_X86_64 },
        { "timerfd_create",    RULE_ALLOW,       "timers as fds: this process's own" },
        { "timerfd_gettime",   RULE_ALLOW,       "reads the run's own timers" },
        { "timerfd_settime",   RULE_ALLOW,       "arms the run's own timers" },
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
        /* Read-only interface queries (uuid1's MAC address, netifaces, os-level libraries): a run sees only
         * the interfaces of its own network namespace, loopback. None of them changes anything. */
        { SIOCGIFCONF, "SIOCGIFCONF", "the interface list of the run's own network namespace (uuid.uuid1())" },
        { SIOCGIFFLAGS, "SIOCGIFFLAGS", "an interface's flags, read only" },
        { SIOCGIFHWADDR, "SIOCGIFHWADDR", "an interface's hardware address (uuid1's node), read only" },
        { SIOCGIFINDEX, "SIOCGIFINDEX", "an interface's index, read only" },
        { SIOCGIFNAME, "SIOCGIFNAME", "an interface's name by index, read only" },
        { SIOCGIFMTU,  "SIOCGIFMTU",  "an interface's MTU, read only" },
        { SIOCGIFADDR, "SIOCGIFADDR", "an interface's address, read only" },
        { SIOCGIFNETMASK, "SIOCGIFNETMASK", "an interface's netmask, read only" },
};

static const PrctlRule prctl_rules[] = {
        /* option       name            reason */
        { PR_SET_NAME,  "PR_SET_NAME",  "libraries name their threads (OpenBLAS, libuv, Rust and Java-style pools)" },
        { PR_GET_NAME,  "PR_GET_NAME",  "reads the calling thread's name" },
};
/* clang-format on */

/* No configuration may allow these (DESIGN §3.7): config-file.c refuses them in allowed_syscalls with
 * the reason of their row. No stage allows them but execve at start-up; the run's supervisor kills the run
 * that makes one (refusals.c), except the rows with an errno: creating a process or starting a program is
 * what ordinary code tries (subprocess.run), so it fails with EPERM at the user's line. Sorted. */
/* clang-format off */
static const NeverAllowRule never_allow[] = {
        /* name               reason                               answer (none: kill) */
        { "acct",              "administers the host", 0 },
        { "add_key",           "reaches the kernel keyrings", 0 },
        { "bpf",               "loads programs into the kernel", 0 },
        { "capset",            "changes capabilities", 0 },
        { "chroot",            "changes the root directory", 0 },
        { "clock_adjtime",     "changes the host's clock", 0 },
        { "clock_settime",     "changes the host's clock", 0 },
        { "delete_module",     "changes the running kernel", 0 },
        { "execve",            "starts another program", EPERM },
        { "execveat",          "starts another program", EPERM },
        { "fanotify_init",     "watches whole filesystems", 0 },
        { "finit_module",      "changes the running kernel", 0 },
        { "fork",              "creates processes", EPERM },
        { "fsconfig",          "changes the mount tree", 0 },
        { "fsmount",           "changes the mount tree", 0 },
        { "fsopen",            "changes the mount tree", 0 },
        { "fspick",            "changes the mount tree", 0 },
        { "init_module",       "changes the running kernel", 0 },
        { "io_uring_enter",    "io_uring works around seccomp", 0 },
        { "io_uring_register", "io_uring works around seccomp", 0 },
        { "io_uring_setup",    "io_uring works around seccomp", 0 },
        { "ioperm",            "reaches hardware I/O ports", 0 },
        { "iopl",              "reaches hardware I/O ports", 0 },
        { "kcmp",              "inspects other processes", 0 },
        { "kexec_file_load",   "replaces the running kernel", 0 },
        { "kexec_load",        "replaces the running kernel", 0 },
        { "keyctl",            "reaches the kernel keyrings", 0 },
        { "lookup_dcookie",    "administers the host", 0 },
        { "mount",             "changes the mount tree", 0 },
        { "mount_setattr",     "changes the mount tree", 0 },
        { "move_mount",        "changes the mount tree", 0 },
        { "name_to_handle_at", "opens files around path checks", 0 },
        { "open_by_handle_at", "opens files around path checks", 0 },
        { "open_tree",         "changes the mount tree", 0 },
        { "perf_event_open",   "exposes kernel and hardware internals", 0 },
        { "personality",       "can turn off address space randomization", 0 },
        { "pidfd_getfd",       "takes files from other processes", 0 },
        { "pivot_root",        "changes the mount tree", 0 },
        { "process_madvise",   "reaches into other processes", 0 },
        { "process_vm_readv",  "reaches into other processes", 0 },
        { "process_vm_writev", "reaches into other processes", 0 },
        { "ptrace",            "reaches into other processes", 0 },
        { "quotactl",          "administers the host", 0 },
        { "reboot",            "administers the host", 0 },
        { "request_key",       "reaches the kernel keyrings", 0 },
        { "setdomainname",     "administers the host", 0 },
        { "setfsgid",          "changes credentials", 0 },
        { "setfsuid",          "changes credentials", 0 },
        { "setgid",            "changes credentials", 0 },
        { "setgroups",         "changes credentials", 0 },
        { "sethostname",       "administers the host", 0 },
        { "setns",             "enters other namespaces", 0 },
        { "setregid",          "changes credentials", 0 },
        { "setresgid",         "changes credentials", 0 },
        { "setresuid",         "changes credentials", 0 },
        { "setreuid",          "changes credentials", 0 },
        { "settimeofday",      "changes the host's clock", 0 },
        { "setuid",            "changes credentials", 0 },
        { "swapoff",           "administers the host", 0 },
        { "swapon",            "administers the host", 0 },
        { "syslog",            "reads the kernel log", 0 },
        { "umount2",           "changes the mount tree", 0 },
        { "unshare",           "creates namespaces", 0 },
        { "uselib",            "loads libraries the obsolete way", 0 },
        { "userfaultfd",       "widens kernel race windows", 0 },
        { "vfork",             "creates processes", EPERM },
        { "vhangup",           "administers the host", 0 },
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

const PrctlRule *seccomp_prctl_rules(size_t *ret_n) {
        *ret_n = sizeof(prctl_rules) / sizeof(prctl_rules[0]);
        return prctl_rules;
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

/* Calls that no row allows but whose refusal the code that makes them expects in another form than ENOSYS.
 * Sorted. */
static const struct {
        const char *name;
        int error;
        const char *reason;
} refusal_errors[] = {
        { "clone", EPERM, "creates a process: a run may start threads only" },
        { "ioctl", ENOTTY, NULL },        /* "not a terminal": what libraries expect of an unknown request */
        { "socket", EAFNOSUPPORT, NULL }, /* a family or type other than TCP, UDP, AF_UNIX or netlink */
};

RefusalAnswer seccomp_refusal_answer(const char *name) {
        for (size_t i = 0; i < sizeof(never_allow) / sizeof(never_allow[0]); i++)
                if (strcmp(never_allow[i].name, name) == 0)
                        return (RefusalAnswer){ .error = never_allow[i].answer,
                                                .reason = never_allow[i].reason };
        for (size_t i = 0; i < sizeof(refusal_errors) / sizeof(refusal_errors[0]); i++)
                if (strcmp(refusal_errors[i].name, name) == 0)
                        return (RefusalAnswer){ .error = refusal_errors[i].error,
                                                .reason = refusal_errors[i].reason };
        /* "Not here": the answer libraries take as "fall back", as Docker's default profile gives. */
        return (RefusalAnswer){ .error = ENOSYS };
}
