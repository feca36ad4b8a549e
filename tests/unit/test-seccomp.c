/* test-seccomp: src/sandbox/seccomp.c and its supervisor, src/sandbox/refusals.c. Each check compiles a
 * filter in the test process, then forks a child that sets no_new_privs, installs it and makes the system
 * call under test; the test process itself stays unfiltered. A final stage is installed as the enter
 * library installs it, with a listener that the child hands over on ENTER_FD_ACK, and the test process
 * answers its refusals with the production supervisor (refusals_answer()), killing the child when that
 * says so; an exec stage is installed as the child before execve() installs it, without a listener. The
 * child reports through its exit code (100 + errno for a refused call) or dies, and the parent asserts
 * which, and what the supervisor named. Children use only system calls the final stage allows
 * (exit_group, write) after the filter is in. */

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "common/cleanup.h"
#include "enter/enter-protocol.h"
#include "runtime/runtime.h"
#include "sandbox/refusals.h"
#include "sandbox/seccomp-policy.h"
#include "sandbox/seccomp.h"

extern char **environ;

/* Exit codes of the children. Anything but CHILD_OK or the expected SIGSYS fails the test. */
enum {
        CHILD_OK = 0,
        CHILD_UNEXPECTED = 1,     /* the call returned something it should not have */
        CHILD_SETUP_FAILED = 90,  /* no_new_privs or the install failed: the test proves nothing */
        CHILD_RETURNED = 91,      /* a call that must kill returned */
        CHILD_FORKED_PARENT = 92, /* a new process was created (seen in the caller) */
        CHILD_FORKED_CHILD = 93,  /* a new process was created (seen in the new process) */
        CHILD_REFUSED = 100,      /* + errno: the call failed with that errno (refused, or the kernel's) */
};

/* What a child returns after a call that must not succeed: 100 + its errno when it failed. */
static int returned(long r) {
        return r < 0 && errno > 0 && errno < 150 ? CHILD_REFUSED + errno : CHILD_RETURNED;
}

/* What the supervisor heard from the last supervised child. */
static Refusals last_refusals;

typedef int (*ChildFn)(void *userdata);

typedef struct Programs {
        bool available;
        SeccompProgram *final[_LANGUAGE_MAX][2]; /* [language][network] */
        SeccompProgram *exec[_LANGUAGE_MAX][2];
} Programs;

static const char *describe_status(int status, char *buf, size_t size) {
        if (WIFEXITED(status))
                (void) snprintf(buf, size, "exit %d", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
                (void) snprintf(buf, size, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
                (void) snprintf(buf, size, "status 0x%x", status);
        return buf;
}

static int install_with_listener(const SeccompProgram *p) {
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } control = { 0 };
        char byte = 'K';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        int listener;

        listener = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                 SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
                                         SECCOMP_FILTER_FLAG_NEW_LISTENER,
                                 &p->prog);
        if (listener < 0)
                return -1;
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &listener, sizeof(int));
        /* The filter allows sendmsg() on ENTER_FD_ACK only, as for the enter library. */
        if (sendmsg(ENTER_FD_ACK, &msg, MSG_NOSIGNAL) != 1)
                return -1;
        (void) close(listener);
        (void) close(ENTER_FD_ACK);
        return 0;
}

static int receive_listener(int sock) {
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } control;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov,
                              .msg_iovlen = 1,
                              .msg_control = control.buf,
                              .msg_controllen = sizeof(control.buf) };
        int fd = -1;

        if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

/* Answers the child's refusals until it exits, as output.c does: kills it when the supervisor says so. */
static void supervise(pid_t pid, int listener) {
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);

        assert_true(pidfd >= 0);
        for (;;) {
                struct pollfd pfds[2] = { { .fd = pidfd, .events = POLLIN },
                                          { .fd = listener, .events = POLLIN } };

                assert_true(poll(pfds, 2, -1) > 0 || errno == EINTR);
                if (pfds[1].revents & POLLIN) {
                        int r = refusals_answer(listener, &last_refusals);
                        assert_true(r >= 0);
                        if (r > 0)
                                (void) kill(pid, SIGKILL);
                }
                if (pfds[0].revents)
                        break;
        }
        (void) close(pidfd);
}

/* Forks; the child installs p (NULL: no filter), a final stage with a listener for this process when
 * supervised, and returns fn()'s value as its exit code. Returns the child's wait status. */
static int run_child_as(const SeccompProgram *p, bool supervised, ChildFn fn, void *userdata) {
        int status, sv[2] = { -1, -1 };
        pid_t pid;

        last_refusals = REFUSALS_NULL;
        supervised = supervised && p;
        if (supervised)
                assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        (void) fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit no_core = { 0, 0 };

                (void) alarm(5); /* a child that hangs dies of SIGALRM and fails the test */
                /* No core files from an expected SIGSYS, and no controlling terminal for vhangup(). */
                (void) setrlimit(RLIMIT_CORE, &no_core);
                (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
                (void) setsid();
                if (supervised && dup2(sv[1], ENTER_FD_ACK) != ENTER_FD_ACK)
                        _exit(CHILD_SETUP_FAILED);
                if (p) {
                        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                                _exit(CHILD_SETUP_FAILED);
                        if ((supervised ? install_with_listener(p) : seccomp_install(p)) < 0)
                                _exit(CHILD_SETUP_FAILED);
                }
                _exit(fn(userdata));
        }
        if (supervised) {
                int listener;

                (void) close(sv[1]);
                listener = receive_listener(sv[0]);
                (void) close(sv[0]);
                if (listener >= 0) {
                        supervise(pid, listener);
                        (void) close(listener);
                }
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}

/* A final stage runs supervised, as under the enter library. */
static int run_child(const SeccompProgram *p, ChildFn fn, void *userdata) {
        return run_child_as(p, true, fn, userdata);
}

/* An exec stage runs as before execve(): no listener, so a refused call fails with ENOSYS. */
static int run_exec_stage(const SeccompProgram *p, ChildFn fn, void *userdata) {
        return run_child_as(p, false, fn, userdata);
}

static bool refusal_named(int nr) {
        for (unsigned i = 0; i < last_refusals.n; i++)
                if (last_refusals.calls[i].nr == nr)
                        return true;
        return false;
}

/* The call failed with error, never reaching the kernel (the child's arguments would make the kernel say
 * something else), and the supervisor named it (nr >= 0) or the filter answered it itself (nr < 0). */
static void assert_refused(int status, int error, long nr, const char *what) {
        char buf[64];

        if (!WIFEXITED(status) || WEXITSTATUS(status) != CHILD_REFUSED + error)
                fail_msg("%s: expected the call to fail with errno %d, got %s", what, error,
                         describe_status(status, buf, sizeof(buf)));
        if (nr >= 0 && !refusal_named((int) nr))
                fail_msg("%s: the supervisor did not name call %ld", what, nr);
}

/* The supervisor killed the child for a never-allow call, and named it. */
static void assert_killed(int status, long nr, const char *what) {
        char buf[64];

        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
                fail_msg("%s: expected the supervisor's SIGKILL, got %s", what,
                         describe_status(status, buf, sizeof(buf)));
        if (last_refusals.killed_nr != (int) nr)
                fail_msg("%s: expected call %ld to be named as the kill, got %d", what, nr,
                         last_refusals.killed_nr);
}

static void assert_killed_by_sigsys(int status, const char *what) {
        char buf[64];

        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSYS)
                fail_msg("%s: expected death by SIGSYS, got %s", what,
                         describe_status(status, buf, sizeof(buf)));
}

static void assert_exited_ok(int status, const char *what) {
        char buf[64];

        if (!WIFEXITED(status) || WEXITSTATUS(status) != CHILD_OK)
                fail_msg("%s: expected exit %d, got %s", what, CHILD_OK,
                         describe_status(status, buf, sizeof(buf)));
}

static SeccompProgram *compile(Language l, bool network, SeccompStage stage, char *const *extra) {
        SeccompProgram *p = NULL;
        int r;

        r = seccomp_compile(runtime_get(l)->rules, runtime_get(l)->n_rules, network, stage, extra, &p);
        if (r < 0)
                fail_msg("seccomp_compile(%s, network=%d, stage=%d): %s", language_to_string(l), network,
                         (int) stage, strerror(-r));
        assert_non_null(p);
        assert_true(p->prog.len > 0);
        return p;
}

/* Can this kernel (and whatever confines this test) take a seccomp filter from us at all? */
static int probe_child(void *userdata) {
        return CHILD_OK;
}

static bool seccomp_filters_available(void) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        SeccompProgram p = { .prog = { .len = 1, .filter = &allow } };
        int status;

        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
                return false; /* kernel without CONFIG_SECCOMP */
        status = run_child(&p, probe_child, NULL);
        return WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK;
}

static int setup_programs(void **state) {
        Programs *progs = calloc(1, sizeof(*progs));

        if (!progs)
                return -1;
        *state = progs;
        progs->available = seccomp_filters_available();
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++) {
                        if (seccomp_compile(runtime_get(l)->rules, runtime_get(l)->n_rules, net,
                                            SECCOMP_STAGE_FINAL, NULL, &progs->final[l][net]) < 0)
                                return -1;
                        if (seccomp_compile(runtime_get(l)->rules, runtime_get(l)->n_rules, net,
                                            SECCOMP_STAGE_EXEC, NULL, &progs->exec[l][net]) < 0)
                                return -1;
                }
        return 0;
}

static int teardown_programs(void **state) {
        Programs *progs = *state;

        if (progs) {
                for (Language l = 0; l < _LANGUAGE_MAX; l++)
                        for (int net = 0; net < 2; net++) {
                                progs->final[l][net] = seccomp_program_free(progs->final[l][net]);
                                progs->exec[l][net] = seccomp_program_free(progs->exec[l][net]);
                        }
                free(progs);
        }
        return 0;
}

static Programs *get_programs(void **state) {
        Programs *progs = *state;

        if (!progs->available)
                skip(); /* no seccomp filters here: nothing of this file can be checked */
        return progs;
}

/* ---- the children ---- */

static int child_execve_true(void *userdata) {
        char *argv[] = { (char *) "true", NULL };

        return returned(execve("/bin/true", argv, environ));
}

static int child_execveat_true(void *userdata) {
        char *argv[] = { (char *) "true", NULL };

        return returned(syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, environ, 0));
}

static int child_clone_fork(void *userdata) {
        /* fork() as glibc does it: a clone without CLONE_THREAD */
        long r = syscall(SYS_clone, (long) SIGCHLD, 0L, 0L, 0L, 0L);

        if (r == 0)
                _exit(CHILD_FORKED_CHILD);
        return r > 0 ? CHILD_FORKED_PARENT : returned(r);
}

static int child_glibc_fork(void *userdata) {
        pid_t pid = fork();

        if (pid == 0)
                _exit(CHILD_FORKED_CHILD);
        return pid > 0 ? CHILD_FORKED_PARENT : returned(pid);
}

#ifdef SYS_fork /* x86-64; the generic syscall ABI (arm64) has only clone, tested above */
static int child_sys_fork(void *userdata) {
        long r = syscall(SYS_fork);

        if (r == 0)
                _exit(CHILD_FORKED_CHILD);
        return r > 0 ? CHILD_FORKED_PARENT : returned(r);
}
#endif

static int child_clone_thread_newpid(void *userdata) {
        /* Thread flags plus a namespace flag: the kernel itself refuses this combination with EINVAL,
         * so only the supervisor's kill shows the filter refused it; a thread-only rule that ignored
         * namespace bits would return here. */
        long r = syscall(SYS_clone, (long) (CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_NEWPID), 0L, 0L,
                         0L, 0L);

        if (r == 0)
                _exit(CHILD_FORKED_CHILD);
        return CHILD_RETURNED;
}

/* struct clone_args of <linux/sched.h>, written out so that header does not fight <sched.h> */
struct test_clone_args {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static int child_clone3(void *userdata) {
        struct test_clone_args args = { .exit_signal = SIGCHLD };
        long r;

        /* A valid fork request: if the filter let it through, a process would be created. */
        r = syscall(SYS_clone3, &args, sizeof(args));
        if (r == 0)
                _exit(CHILD_FORKED_CHILD);
        if (r > 0)
                return CHILD_FORKED_PARENT;
        return errno == ENOSYS ? CHILD_OK : CHILD_UNEXPECTED;
}

static void *thread_main(void *arg) {
        *(int *) arg = 42;
        return arg;
}

static int child_pthread(void *userdata) {
        pthread_t t;
        int value = 0;
        void *ret = NULL;

        /* glibc tries clone3 (ENOSYS under the filter), then clone with the thread flags. */
        if (pthread_create(&t, NULL, thread_main, &value) != 0)
                return CHILD_UNEXPECTED;
        if (pthread_join(t, &ret) != 0)
                return CHILD_UNEXPECTED;
        return value == 42 && ret == &value ? CHILD_OK : CHILD_UNEXPECTED;
}

static int child_socket_inet_eacces(void *userdata) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd < 0 && errno == EACCES ? CHILD_OK : CHILD_UNEXPECTED;
}

static int child_socket_inet6_eacces(void *userdata) {
        int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        return fd < 0 && errno == EACCES ? CHILD_OK : CHILD_UNEXPECTED;
}

static int child_socket_inet_works(void *userdata) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return errno == EAFNOSUPPORT ? 77 : CHILD_UNEXPECTED;
        (void) close(fd);
        return CHILD_OK;
}

/* Every TCP and UDP socket an interpreter makes: protocol 0 or the explicit one, with the flag bits. */
static int child_socket_tcp_udp_work(void *userdata) {
        static const int cases[][3] = {
                { AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0 },
                { AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP },
                { AF_INET, SOCK_DGRAM, 0 },
                { AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDP },
                { AF_INET6, SOCK_STREAM, IPPROTO_TCP },
                { AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int fd = socket(cases[i][0], cases[i][1], cases[i][2]);
                if (fd < 0)
                        return errno == EAFNOSUPPORT ? 77 : CHILD_UNEXPECTED;
                (void) close(fd);
        }
        return CHILD_OK;
}

/* userdata: the int[3] arguments of socket(). Returns only if the filter let the call through. */
static int child_socket_args(void *userdata) {
        const int *a = userdata;

        return returned(socket(a[0], a[1], a[2]));
}

/* sysinfo(2) and statfs(2)/fstatfs(2) of "/" would show the host's uptime, processes and disk: ENOSYS,
 * which glibc's sysconf(), libuv and os.statvfs() survive. getgroups(2) works (os.getgroups()). */
static int child_host_figures_hidden(void *userdata) {
        struct statfs sfs;
        struct sysinfo si;
        gid_t groups[4];
        int fd;

        if (sysinfo(&si) >= 0 || errno != ENOSYS)
                return CHILD_UNEXPECTED;
        if (statfs("/", &sfs) >= 0 || errno != ENOSYS)
                return CHILD_UNEXPECTED;
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return CHILD_UNEXPECTED;
        if (fstatfs(fd, &sfs) >= 0 || errno != ENOSYS)
                return CHILD_UNEXPECTED;
        (void) close(fd);
        (void) sysconf(_SC_PHYS_PAGES); /* glibc asks sysinfo and ignores its failure: no crash */
        return getgroups(4, groups) >= 0 ? CHILD_OK : CHILD_UNEXPECTED;
}

static int child_socket_unix_eacces(void *userdata) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd < 0 && errno == EACCES ? CHILD_OK : CHILD_UNEXPECTED;
}

static int child_socket_packet(void *userdata) {
        /* Neither IP nor AF_UNIX: not in the table, so the default action. */
        return returned(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
}

static int child_connect(void *userdata) {
        return returned(connect(-1, NULL, 0)); /* the kernel would say EBADF */
}

static int child_x32_getpid(void *userdata) {
        /* The x32 ABI: same audit arch as x86_64, system call number with bit 30 set. */
        (void) syscall(0x40000000 | SYS_getpid);
        return CHILD_RETURNED;
}

#if defined(__x86_64__)
static long int80_getpid(void) {
        long ret;

        /* i386 getpid is 20; int $0x80 enters through the ia32 entry, with AUDIT_ARCH_I386. */
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "r8", "r9", "r10", "r11", "memory");
        return ret;
}

static int child_int80_getpid(void *userdata) {
        (void) int80_getpid();
        return CHILD_RETURNED;
}

static int child_int80_probe(void *userdata) {
        return int80_getpid() == (long) getpid() ? CHILD_OK : CHILD_UNEXPECTED;
}
#endif

static int child_getcpu(void *userdata) {
        unsigned cpu = 0;
        long r = syscall(SYS_getcpu, &cpu, NULL, NULL);

        return r == 0 ? CHILD_OK : returned(r);
}

/* The ioctl children get a pipe's read end: a terminal request on it fails with ENOTTY if the filter
 * lets it through, so even a broken filter never touches a real terminal. */
static int child_ioctl_tcgets(void *userdata) {
        char buf[64];

        /* isatty(): allowed, and fails with ENOTTY as it must. */
        return ioctl(*(const int *) userdata, TCGETS, buf) < 0 && errno == ENOTTY ? CHILD_OK
                                                                                  : CHILD_UNEXPECTED;
}

static int child_ioctl_tiocsti(void *userdata) {
        char c = 'x';

        /* On a pipe the kernel itself would say ENOTTY too: the supervisor's naming tells them apart. */
        return returned(ioctl(*(const int *) userdata, TIOCSTI, &c));
}

static int child_ioctl_tiocsti_high_bits(void *userdata) {
        char c = 'x';

        /* The kernel truncates the request to 32 bits; a filter comparing only those would let
         * TIOCSTI | 1 << 32 through as TIOCSTI. The same for an allowed request with high bits. */
        return returned(
                syscall(SYS_ioctl, *(const int *) userdata, (unsigned long) TIOCSTI | (1UL << 32), &c));
}

static int child_ioctl_tcgets_high_bits(void *userdata) {
        char buf[64];

        return returned(
                syscall(SYS_ioctl, *(const int *) userdata, (unsigned long) TCGETS | (1UL << 32), buf));
}

static int child_raw_syscall(void *userdata) {
        long nr = *(const long *) userdata;

        /* Arguments that make every one of these fail in the kernel if the filter let them through:
         * bad pointers, bad fds, bad flags. */
        return returned(syscall(nr, -1L, -1L, -1L, -1L, -1L, -1L));
}

/* A call the filter must answer with an errno itself: with these arguments the kernel would say EINVAL,
 * EFAULT or EBADF, so the errno of the row proves that the call never reached it. */
static int child_raw_syscall_errno(void *userdata) {
        const long *call = userdata; /* { nr, errno } */

        if (syscall(call[0], -1L, -1L, -1L, -1L, -1L, -1L) == -1 && errno == call[1])
                return CHILD_OK;
        return CHILD_UNEXPECTED;
}

/* The errno with which the common or language rows of l answer name (RULE_ENOSYS, RULE_EPERM), or 0 when
 * no such row names it. A never-allow name may have one: a runtime that only probes the call (libuv and
 * io_uring_setup) must get a clean failure, not a kill, and the call still never reaches the kernel. */
static int row_errno(Language l, const char *name) {
        const SyscallRule *tables[2];
        size_t sizes[2];

        tables[0] = seccomp_common_rules(&sizes[0]);
        tables[1] = runtime_get(l)->rules;
        sizes[1] = runtime_get(l)->n_rules;
        for (size_t t = 0; t < 2; t++)
                for (size_t i = 0; i < sizes[t]; i++) {
                        if (!streq(tables[t][i].name, name))
                                continue;
                        if (tables[t][i].action == RULE_ENOSYS)
                                return ENOSYS;
                        if (tables[t][i].action == RULE_EPERM)
                                return EPERM;
                }
        return 0;
}

/* Never-allow name: refused by the filter with the errno of its row; else, supervised (a final stage), the
 * supervisor names it and kills the run or answers its errno (creating a process: EPERM); unsupervised (an
 * exec stage, which has no listener), it fails with ENOSYS. It never reaches the kernel either way. */
static void assert_never_reaches_the_kernel(const SeccompProgram *p, bool supervised, Language l,
                                            const char *name, long nr, const char *stage) {
        int e = row_errno(l, name), status;
        char buf[64], what[128];

        if (e != 0) {
                long call[2] = { nr, e };

                status = run_child_as(p, supervised, child_raw_syscall_errno, call);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != CHILD_OK)
                        fail_msg("%s (%s, %s): expected errno %d from the filter, got %s", name, stage,
                                 language_to_string(l), e, describe_status(status, buf, sizeof(buf)));
                return;
        }
        (void) snprintf(what, sizeof(what), "%s (%s, %s)", name, stage, language_to_string(l));
        status = run_child_as(p, supervised, child_raw_syscall, &nr);
        if (!supervised)
                assert_refused(status, ENOSYS, -1, what);
        else if (seccomp_refusal_answer(name).error == 0)
                assert_killed(status, nr, what);
        else
                assert_refused(status, seccomp_refusal_answer(name).error, nr, what);
}

/* The calls ordinary libraries make that a run may now make (issue 38), each with harmless arguments. */
static int child_library_calls(void *userdata) {
        struct statx stx;
        cpu_set_t cpus;
        char name[16];
        int fds[2], fd;
        void *m;

        if (listxattr("/", NULL, 0) < 0 && errno != ENOTSUP && errno != ENODATA)
                return 10;
        if (getxattr("/", "user.none", NULL, 0) < 0 && errno != ENODATA && errno != ENOTSUP)
                return 11;
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED || msync(m, 4096, MS_SYNC) < 0)
                return 12;
        if (statx(AT_FDCWD, "/", 0, STATX_BASIC_STATS, &stx) < 0)
                return 13;
        if (prctl(PR_SET_NAME, "worker-1", 0, 0, 0) < 0 || prctl(PR_GET_NAME, name, 0, 0, 0) < 0 ||
            strcmp(name, "worker-1") != 0)
                return 14;
        fd = eventfd(0, EFD_CLOEXEC);
        if (fd < 0)
                return 15;
        (void) close(fd);
        if (pipe2(fds, O_CLOEXEC) < 0)
                return 16;
        fd = memfd_create("buffer", MFD_CLOEXEC);
        if (fd < 0)
                return 17;
        fd = inotify_init1(IN_CLOEXEC);
        if (fd < 0)
                return 18;
        if (setpriority(PRIO_PROCESS, 0, 5) < 0)
                return 19;
        if (sched_getaffinity(0, sizeof(cpus), &cpus) < 0 || sched_setaffinity(0, sizeof(cpus), &cpus) < 0)
                return 20;
        /* Other prctl options stay refused, named: a run has no business with them. */
        return returned(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}

/* ---- the tests ---- */

static void test_final_refuses_execve(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++) {
                        assert_refused(run_child(progs->final[l][net], child_execve_true, NULL), EPERM,
                                       SYS_execve, "execve under the final stage");
                        assert_refused(run_child(progs->final[l][net], child_execveat_true, NULL), EPERM,
                                       SYS_execveat, "execveat under the final stage");
                }
        /* and the same child without a filter runs /bin/true: the refusal came from the filter */
        assert_exited_ok(run_child(NULL, child_execve_true, NULL), "execve without a filter");
}

static void test_exec_stage_allows_execve(void **state) {
        Programs *progs = get_programs(state);

        /* /bin/true's own start-up (ld.so, glibc) runs under the exec stage and exits 0. */
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++)
                        assert_exited_ok(run_exec_stage(progs->exec[l][net], child_execve_true, NULL),
                                         "execve of /bin/true under the exec stage");
}

/* Creating a process fails with EPERM at the caller's line (subprocess.run raises PermissionError);
 * asking for a namespace while at it is an attack: the supervisor kills. */
static void test_final_refuses_fork(void **state) {
        Programs *progs = get_programs(state);
        const SeccompProgram *p = progs->final[LANGUAGE_PYTHON3][false];

        assert_refused(run_child(p, child_clone_fork, NULL), EPERM, SYS_clone, "clone(SIGCHLD)");
        assert_refused(run_child(p, child_glibc_fork, NULL), EPERM, SYS_clone, "glibc fork()");
#ifdef SYS_fork
        assert_refused(run_child(p, child_sys_fork, NULL), EPERM, SYS_fork, "SYS_fork");
#endif
        assert_killed(run_child(p, child_clone_thread_newpid, NULL), SYS_clone,
                      "clone(CLONE_THREAD|CLONE_NEWPID)");
        p = progs->final[LANGUAGE_NODEJS][true];
        assert_refused(run_child(p, child_clone_fork, NULL), EPERM, SYS_clone, "clone(SIGCHLD), nodejs");
        assert_refused(run_child(p, child_glibc_fork, NULL), EPERM, SYS_clone, "glibc fork(), nodejs");
}

static void test_clone3_enosys(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                assert_exited_ok(run_child(progs->final[l][false], child_clone3, NULL), "clone3 → ENOSYS");
        assert_exited_ok(run_exec_stage(progs->exec[LANGUAGE_PYTHON3][true], child_clone3, NULL),
                         "clone3 → ENOSYS, exec stage");
}

static void test_threads_work(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++)
                        assert_exited_ok(run_child(progs->final[l][net], child_pthread, NULL),
                                         "pthread_create under the final stage");
}

static void test_socket_without_network(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const SeccompProgram *p = progs->final[l][false];

                assert_exited_ok(run_child(p, child_socket_inet_eacces, NULL), "socket(AF_INET) → EACCES");
                assert_exited_ok(run_child(p, child_socket_inet6_eacces, NULL), "socket(AF_INET6) → EACCES");
                assert_exited_ok(run_child(p, child_socket_unix_eacces, NULL), "socket(AF_UNIX) → EACCES");
                /* the other network calls are not even in the filter */
                assert_refused(run_child(p, child_connect, NULL), ENOSYS, SYS_connect,
                               "connect() without network");
        }
}

static void test_socket_with_network(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const SeccompProgram *p = progs->final[l][true];
                int status;

                status = run_child(NULL, child_socket_inet_works, NULL);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                        skip(); /* no IPv4 in this kernel */
                assert_exited_ok(run_child(p, child_socket_inet_works, NULL),
                                 "socket(AF_INET) with network");
                assert_exited_ok(run_child(p, child_socket_unix_eacces, NULL),
                                 "socket(AF_UNIX) → EACCES with network");
                assert_refused(run_child(p, child_socket_packet, NULL), EAFNOSUPPORT, SYS_socket,
                               "socket(AF_PACKET)");
        }
}

static void test_host_figures_hidden(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++) {
                        assert_exited_ok(run_child(progs->final[l][net], child_host_figures_hidden, NULL),
                                         "sysinfo/statfs → ENOSYS, getgroups works (final stage)");
                        assert_exited_ok(
                                run_exec_stage(progs->exec[l][net], child_host_figures_hidden, NULL),
                                "sysinfo/statfs → ENOSYS, getgroups works (exec stage)");
                }
}

/* Issue 12: with network, AF_INET/AF_INET6 admitted any protocol, so MPTCP and UDP-Lite sockets were
 * created. Only TCP and UDP remain; the rest is refused, flag bits or not. */
static void test_socket_inet_only_tcp_udp(void **state) {
        static int killed[][3] = {
                { AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */ },
                { AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 262 },
                { AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE },
                { AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDPLITE },
                { AF_INET, SOCK_STREAM, IPPROTO_SCTP },
                { AF_INET, SOCK_SEQPACKET, 0 },
                { AF_INET, SOCK_DGRAM, IPPROTO_ICMP },
                { AF_INET, SOCK_RAW, IPPROTO_RAW },
                { AF_INET, SOCK_STREAM, IPPROTO_UDP },
                { AF_INET6, SOCK_DGRAM, IPPROTO_TCP },
        };
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const SeccompProgram *p = progs->final[l][true];
                int status;

                status = run_child(NULL, child_socket_tcp_udp_work, NULL);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                        skip(); /* no IPv4 or IPv6 in this kernel */
                assert_exited_ok(run_child(p, child_socket_tcp_udp_work, NULL), "TCP and UDP sockets");
                assert_exited_ok(run_exec_stage(progs->exec[l][true], child_socket_tcp_udp_work, NULL),
                                 "TCP and UDP sockets, exec stage");
                for (size_t i = 0; i < sizeof(killed) / sizeof(killed[0]); i++) {
                        assert_refused(run_child(p, child_socket_args, killed[i]), EAFNOSUPPORT, SYS_socket,
                                       "socket() of another protocol, final stage");
                        assert_refused(run_exec_stage(progs->exec[l][true], child_socket_args, killed[i]),
                                       ENOSYS, -1, "socket() of another protocol, exec stage");
                }
        }
}

/* The instructions a call number passes through before the filter returns or compares an argument,
 * for this architecture: what the kernel walks for every number when the filter is installed
 * (seccomp_cache_prepare()), and what every call with argument rules walks each time it is made. Only
 * the loads, jumps and masks libseccomp emits for the number and the architecture are followed. */
static unsigned path_length(const SeccompProgram *p, uint32_t nr) {
        uint32_t a = 0;
        unsigned steps = 0;

        for (unsigned pc = 0; pc < p->prog.len; pc++, steps++) {
                const struct sock_filter *insn = &p->prog.filter[pc];
                bool taken = false;

                switch (insn->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (insn->k == offsetof(struct seccomp_data, nr))
                                a = nr;
                        else if (insn->k == offsetof(struct seccomp_data, arch))
                                a = seccomp_arch_native();
                        else
                                return steps + 1; /* an argument or the instruction pointer */
                        continue;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= insn->k;
                        continue;
                case BPF_JMP | BPF_JA:
                        pc += insn->k;
                        continue;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        taken = a == insn->k;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        taken = a >= insn->k;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        taken = a > insn->k;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        taken = (a & insn->k) != 0;
                        break;
                case BPF_RET | BPF_K:
                        return steps + 1;
                default:
                        fail_msg("instruction %u: code 0x%x is not one libseccomp emits for a number", pc,
                                 insn->code);
                }
                pc += taken ? insn->jt : insn->jf;
        }
        fail_msg("call %u runs off the end of the program", nr);
        return 0;
}

static unsigned longest_path(const SeccompProgram *p) {
        unsigned longest = 0;

        for (uint32_t nr = 0; nr < 1024; nr++) {
                unsigned n = path_length(p, nr);

                if (n > longest)
                        longest = n;
        }
        return longest;
}

/* The filters are binary searches on the call number (seccomp_program_export()), not a chain of a test
 * per rule: installing one then costs the kernel a few instructions per number instead of up to the
 * whole program (0.10-0.18 ms per filter, three per run, with a chain; docs/performance.md). A chain
 * of these tables takes 120-130 instructions for its last numbers, a search 15-16. */
static void test_each_call_number_is_decided_along_a_short_path(void **state) {
        Programs *progs = *state;

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++) {
                        unsigned e = longest_path(progs->exec[l][net]),
                                 f = longest_path(progs->final[l][net]);

                        if (e > 40 || f > 40)
                                fail_msg("%s, network=%d: a call number passes %u (exec stage) and %u "
                                         "(final) instructions before its action or its argument tests; a "
                                         "binary search needs no more than 40",
                                         language_to_string(l), net, e, f);
                }
}

static void test_foreign_abis_killed(void **state) {
        Programs *progs = get_programs(state);
        const SeccompProgram *p = progs->final[LANGUAGE_PYTHON3][false];

        assert_killed_by_sigsys(run_child(p, child_x32_getpid, NULL), "x32 getpid");
        assert_killed_by_sigsys(run_exec_stage(progs->exec[LANGUAGE_NODEJS][true], child_x32_getpid, NULL),
                                "x32 getpid, exec stage");
#if defined(__x86_64__)
        {
                int status = run_child(NULL, child_int80_probe, NULL);

                if (!WIFEXITED(status) || WEXITSTATUS(status) != CHILD_OK)
                        skip(); /* kernel without ia32 emulation: int $0x80 cannot reach a syscall */
                assert_killed_by_sigsys(run_child(p, child_int80_getpid, NULL), "i386 getpid (int $0x80)");
        }
#endif
}

static void test_ioctl_filtered(void **state) {
        Programs *progs = get_programs(state);
        int pipefd[2];

        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const SeccompProgram *p = progs->final[l][false];

                assert_exited_ok(run_child(p, child_ioctl_tcgets, &pipefd[0]), "ioctl(TCGETS) → ENOTTY");
                assert_refused(run_child(p, child_ioctl_tiocsti, &pipefd[0]), ENOTTY, SYS_ioctl,
                               "ioctl(TIOCSTI)");
                assert_refused(run_child(p, child_ioctl_tiocsti_high_bits, &pipefd[0]), ENOTTY, SYS_ioctl,
                               "ioctl(TIOCSTI | 1 << 32)");
                assert_refused(run_child(p, child_ioctl_tcgets_high_bits, &pipefd[0]), ENOTTY, SYS_ioctl,
                               "ioctl(TCGETS | 1 << 32)");
        }
        (void) close(pipefd[0]);
        (void) close(pipefd[1]);
}

static void test_final_never_allow(void **state) {
        Programs *progs = get_programs(state);
        const NeverAllowRule *never;
        size_t n;

        never = seccomp_never_allow(&n);
        for (size_t i = 0; i < n; i++) {
                long nr = seccomp_syscall_resolve_name(never[i].name);

                if (nr < 0)
                        continue; /* not on this architecture (test-seccomp-policy checks x86_64) */
                for (Language l = 0; l < _LANGUAGE_MAX; l++)
                        for (int net = 0; net < 2; net++)
                                assert_never_reaches_the_kernel(
                                        progs->final[l][net], true, l, never[i].name, nr,
                                        net ? "final stage, network" : "final stage");
        }
}

static void test_exec_stage_never_allow_but_execve(void **state) {
        Programs *progs = get_programs(state);
        const NeverAllowRule *never;
        size_t n;

        never = seccomp_never_allow(&n);
        for (size_t i = 0; i < n; i++) {
                long nr = seccomp_syscall_resolve_name(never[i].name);

                if (nr < 0 || streq(never[i].name, "execve"))
                        continue;
                for (Language l = 0; l < _LANGUAGE_MAX; l++)
                        assert_never_reaches_the_kernel(progs->exec[l][true], false, l, never[i].name, nr,
                                                        "exec stage");
        }
}

static void test_extra_never_allow_refused(void **state) {
        const NeverAllowRule *never;
        size_t n;

        {
                char *extra[] = { (char *) "ptrace", NULL };
                SeccompProgram *p = (SeccompProgram *) 0x1;

                assert_int_equal(seccomp_compile(runtime_get(LANGUAGE_PYTHON3)->rules,
                                                 runtime_get(LANGUAGE_PYTHON3)->n_rules, false,
                                                 SECCOMP_STAGE_FINAL, extra, &p),
                                 -EPERM);
                assert_ptr_equal(p, (SeccompProgram *) 0x1);
        }

        /* every name of the list, in either stage, also after an allowed name */
        never = seccomp_never_allow(&n);
        for (size_t i = 0; i < n; i++)
                for (SeccompStage s = 0; s < _SECCOMP_STAGE_MAX; s++) {
                        char *extra[] = { (char *) "getcpu", (char *) never[i].name, NULL };
                        SeccompProgram *p = NULL;
                        int r;

                        r = seccomp_compile(runtime_get(LANGUAGE_NODEJS)->rules,
                                            runtime_get(LANGUAGE_NODEJS)->n_rules, true, s, extra, &p);
                        if (r != -EPERM)
                                fail_msg("extra '%s' (stage %d): expected -EPERM, got %d", never[i].name,
                                         (int) s, r);
                        assert_null(p);
                }
}

static void test_extra_unknown_refused(void **state) {
        static const char *const names[] = { "no_such_syscall", "", "getpid ", "GETPID" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char *extra[] = { (char *) names[i], NULL };
                SeccompProgram *p = (SeccompProgram *) 0x1;
                int r;

                r = seccomp_compile(runtime_get(LANGUAGE_PYTHON3)->rules,
                                    runtime_get(LANGUAGE_PYTHON3)->n_rules, false, SECCOMP_STAGE_FINAL,
                                    extra, &p);
                if (r != -EINVAL)
                        fail_msg("extra '%s': expected -EINVAL, got %d", names[i], r);
                assert_ptr_equal(p, (SeccompProgram *) 0x1);
        }
}

static void test_extra_allows(void **state) {
        Programs *progs = get_programs(state);
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
        char *extra[] = { (char *) "getcpu", NULL };

        /* getcpu is in no table: refused and named ... */
        assert_refused(run_child(progs->final[LANGUAGE_PYTHON3][false], child_getcpu, NULL), ENOSYS,
                       SYS_getcpu, "getcpu without allowed_syscalls");
        /* ... until the operator allows it */
        p = compile(LANGUAGE_PYTHON3, false, SECCOMP_STAGE_FINAL, extra);
        assert_exited_ok(run_child(p, child_getcpu, NULL), "getcpu with allowed_syscalls");
        /* and nothing else got through with it */
        assert_refused(run_child(p, child_execve_true, NULL), EPERM, SYS_execve,
                       "execve with allowed_syscalls");
}

static void test_extra_duplicate_of_table_row(void **state) {
        Programs *progs = get_programs(state);
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
        char *extra[] = { (char *) "getpid", (char *) "getpid", (char *) "read", NULL };

        /* Names the tables already allow (or repeated) are accepted and change nothing. */
        p = compile(LANGUAGE_NODEJS, false, SECCOMP_STAGE_FINAL, extra);
        assert_refused(run_child(p, child_execve_true, NULL), EPERM, SYS_execve, "execve");
        assert_exited_ok(run_child(p, child_socket_inet_eacces, NULL), "socket(AF_INET) → EACCES");
        assert_refused(run_child(progs->final[LANGUAGE_NODEJS][false], child_getcpu, NULL), ENOSYS,
                       SYS_getcpu, "getcpu");
}

/* allowed_syscalls widens the list (DESIGN §3.7), but a name whose row filters arguments must not turn
 * into a plain allow: refusing the name (-EPERM) or keeping the row's filter both pass. Returns the wait
 * status of fn under the final stage of python3 with network and extra, or -1 when it was refused. */
static int run_with_extra(const char *name, ChildFn fn, void *userdata) {
        char *extra[] = { (char *) name, NULL };
        SeccompProgram *p = NULL;
        int r, status;

        r = seccomp_compile(runtime_get(LANGUAGE_PYTHON3)->rules, runtime_get(LANGUAGE_PYTHON3)->n_rules,
                            true, SECCOMP_STAGE_FINAL, extra, &p);
        if (r == -EPERM)
                return -1;
        if (r < 0)
                fail_msg("extra '%s': %s", name, strerror(-r));
        status = run_child(p, fn, userdata);
        p = seccomp_program_free(p);
        return status;
}

static void test_extra_clone_still_threads_only(void **state) {
        int status;

        (void) get_programs(state);
        /* fork is never allowed, whatever the operator lists */
        status = run_with_extra("clone", child_clone_fork, NULL);
        if (status != -1)
                assert_refused(status, EPERM, SYS_clone, "clone(SIGCHLD) with 'clone' in allowed_syscalls");
        status = run_with_extra("clone", child_pthread, NULL);
        if (status != -1)
                assert_exited_ok(status, "threads with 'clone' in allowed_syscalls");
        status = run_with_extra("clone3", child_clone3, NULL);
        if (status != -1)
                assert_exited_ok(status, "clone3 → ENOSYS with 'clone3' in allowed_syscalls");
}

static void test_extra_ioctl_still_filtered(void **state) {
        int pipefd[2], status;

        (void) get_programs(state);
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        status = run_with_extra("ioctl", child_ioctl_tiocsti, &pipefd[0]);
        (void) close(pipefd[0]);
        (void) close(pipefd[1]);
        if (status != -1)
                assert_refused(status, ENOTTY, SYS_ioctl, "ioctl(TIOCSTI) with 'ioctl' in allowed_syscalls");
}

static void test_extra_socket_still_filtered(void **state) {
        int status;

        (void) get_programs(state);
        /* AF_UNIX would reach the abstract sockets of the host's network namespace (seccomp.c) */
        status = run_with_extra("socket", child_socket_unix_eacces, NULL);
        if (status != -1)
                assert_exited_ok(status, "socket(AF_UNIX) → EACCES with 'socket' in allowed_syscalls");
        status = run_with_extra("socket", child_socket_packet, NULL);
        if (status != -1)
                assert_refused(status, EAFNOSUPPORT, SYS_socket,
                               "socket(AF_PACKET) with 'socket' in allowed_syscalls");
}

static bool program_compares(const SeccompProgram *p, uint32_t k) {
        for (unsigned i = 0; i < p->prog.len; i++) {
                const struct sock_filter *f = &p->prog.filter[i];

                if (f->code == (BPF_JMP | BPF_JEQ | BPF_K) && f->k == k)
                        return true;
        }
        return false;
}

/* Every row that the stage allows on arm64 appears, by its arm64 number, in the program. */
static void assert_rows_in_aarch64_program(const SeccompProgram *p, const SyscallRule *rules, size_t n,
                                           SeccompStage stage, const char *what) {
        for (size_t i = 0; i < n; i++) {
                const SyscallRule *r = &rules[i];
                int nr;

                if (r->arch == RULE_ARCH_X86_64 ||
                    !(r->action == RULE_ALLOW || (r->action == RULE_STARTUP && stage == SECCOMP_STAGE_EXEC)))
                        continue;
                nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, r->name);
                assert_true(nr >= 0); /* test-seccomp-policy.c checks the tables; this only compiles them */
                if (!program_compares(p, (uint32_t) nr))
                        fail_msg("%s: '%s' (arm64 number %d) is not in the program", what, r->name, nr);
        }
}

static void test_every_stage_compiles_for_aarch64(void **state) {
        const SyscallRule *common;
        size_t n_common;

        /* No arm64 machine needed: libseccomp builds the filter of a foreign architecture by name. */
        common = seccomp_common_rules(&n_common);
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int network = 0; network <= 1; network++)
                        for (SeccompStage stage = 0; stage < _SECCOMP_STAGE_MAX; stage++) {
                                _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;
                                const Runtime *rt = runtime_get(l);
                                char what[64];
                                int r;

                                (void) snprintf(what, sizeof(what), "%s network=%d stage=%d",
                                                language_to_string(l), network, (int) stage);
                                r = seccomp_compile_arch(rt->rules, rt->n_rules, network, stage, NULL,
                                                         SCMP_ARCH_AARCH64, &p);
                                if (r < 0)
                                        fail_msg("%s: arm64 compile failed: %s", what, strerror(-r));
                                /* the program checks for arm64's audit arch, and not for this host's */
                                assert_true(program_compares(p, AUDIT_ARCH_AARCH64));
                                assert_false(program_compares(p, AUDIT_ARCH_X86_64));
                                assert_rows_in_aarch64_program(p, common, n_common, stage, what);
                                assert_rows_in_aarch64_program(p, rt->rules, rt->n_rules, stage, what);
                        }
}

static void test_library_calls_allowed(void **state) {
        Programs *progs = get_programs(state);

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                for (int net = 0; net < 2; net++)
                        assert_refused(run_child(progs->final[l][net], child_library_calls, NULL), ENOSYS,
                                       SYS_prctl,
                                       "xattr reads, msync, statx, thread names, eventfd, pipe2, "
                                       "memfd, inotify, nice, affinity; then PR_SET_DUMPABLE");
}

static void test_program_free_null(void **state) {
        assert_null(seccomp_program_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_final_refuses_execve),
                cmocka_unit_test(test_exec_stage_allows_execve),
                cmocka_unit_test(test_final_refuses_fork),
                cmocka_unit_test(test_clone3_enosys),
                cmocka_unit_test(test_threads_work),
                cmocka_unit_test(test_socket_without_network),
                cmocka_unit_test(test_socket_with_network),
                cmocka_unit_test(test_socket_inet_only_tcp_udp),
                cmocka_unit_test(test_host_figures_hidden),
                cmocka_unit_test(test_foreign_abis_killed),
                cmocka_unit_test(test_each_call_number_is_decided_along_a_short_path),
                cmocka_unit_test(test_ioctl_filtered),
                cmocka_unit_test(test_final_never_allow),
                cmocka_unit_test(test_exec_stage_never_allow_but_execve),
                cmocka_unit_test(test_extra_never_allow_refused),
                cmocka_unit_test(test_extra_unknown_refused),
                cmocka_unit_test(test_extra_allows),
                cmocka_unit_test(test_extra_duplicate_of_table_row),
                cmocka_unit_test(test_extra_clone_still_threads_only),
                cmocka_unit_test(test_extra_ioctl_still_filtered),
                cmocka_unit_test(test_extra_socket_still_filtered),
                cmocka_unit_test(test_every_stage_compiles_for_aarch64),
                cmocka_unit_test(test_library_calls_allowed),
                cmocka_unit_test(test_program_free_null),
        };

        return cmocka_run_group_tests(tests, setup_programs, teardown_programs);
}
