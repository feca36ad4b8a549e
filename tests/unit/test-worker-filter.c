/* Unit tests for src/worker/worker-filter.c: in a forked child that loads the filter, what a serving
 * worker does still works, and what the filter is for fails with EPERM. Every denied call is made so
 * that it is harmless if the filter let it through: an execve() of a path that does not exist, a clone()
 * with flags the kernel refuses, kill() with signal 0, a write-open of /dev/null. */

#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
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
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

#include "worker/connslot.h"
#include "worker/worker-filter.h"

/* The outcome of one call in the filtered child: 0, or the errno it failed with. */
typedef int (*Probe)(void);

static int result(long r) {
        return r < 0 ? errno : 0;
}

static int probe_write(void) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return errno;
        int r = result(write(p[1], "x", 1));
        (void) close(p[0]);
        (void) close(p[1]);
        return r;
}
static int probe_unix_socket(void) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return errno;
        int n = 0, r = result(ioctl(fd, FIONREAD, &n));
        (void) close(fd);
        return r;
}
static int probe_anonymous_memory(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return errno;
        return result(munmap(p, 4096));
}
static int probe_memfd(void) { /* as payload_new() makes the runner's: written, then sealed */
        int fd = memfd_create("probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return errno;
        int r = write(fd, "print(1)", 8) == 8 ? 0 : errno;
        if (r == 0)
                r = result(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL));
        (void) close(fd);
        return r;
}
static int probe_read_open(void) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        (void) close(fd);
        return 0;
}
static int probe_read_open_directory(void) { /* glibc's O_TMPFILE holds O_DIRECTORY's bit */
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        (void) close(fd);
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        (void) close(fd);
        return 0;
}
static int probe_tmpfile(void) {
        int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_lock(int operation) {
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        int r = result(flock(fd, operation));
        (void) close(fd);
        return r;
}
static int probe_shared_lock(void) {
        return probe_lock(LOCK_SH);
}
static int probe_exclusive_lock(void) {
        return probe_lock(LOCK_EX | LOCK_NB);
}
static int probe_signal_self(void) {
        return result(kill(getpid(), 0));
}

static int probe_inet_socket(void) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_netlink_socket(void) {
        int fd = socket(AF_NETLINK, SOCK_RAW, 0);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_exec_mapping(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
                (void) munmap(p, 4096);
        return p == MAP_FAILED ? errno : 0;
}
static int probe_mprotect_exec(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -1; /* not what is tested: fail the test */
        int r = result(mprotect(p, 4096, PROT_READ | PROT_EXEC));
        (void) munmap(p, 4096);
        return r;
}
/* The connection slots file, as a worker holds it (connslot_take() in a state dir of the test's, before
 * the filter): at CONNSLOT_FD, open for writing, its slot's byte locked. None of these may reach it; if
 * one got through, it wrote to or locked a file in the test's own temporary directory. */
static char slots_path[96];

static int probe_slots_pwrite_far(void) {
        return result(pwrite(CONNSLOT_FD, "x", 1, 1 << 20)); /* 1 MiB: the finding's /run filler */
}
static int probe_slots_write(void) {
        return result(write(CONNSLOT_FD, "x", 1));
}
static int probe_slots_write_high_bits(void) {
        /* the kernel reads an fd as 32 bits: the filter must not see a different number */
        return result(syscall(SYS_write, (long) ((UINT64_C(1) << 32) | CONNSLOT_FD), "x", 1));
}
static int probe_slots_writev(void) {
        struct iovec v = { (void *) "x", 1 };
        return result(writev(CONNSLOT_FD, &v, 1));
}
static int probe_slots_ftruncate(void) {
        return result(ftruncate(CONNSLOT_FD, 1 << 20));
}
static int probe_ftruncate_any(void) { /* no worker resizes a file: refused on any fd */
        int fd = memfd_create("probe", MFD_CLOEXEC);
        if (fd < 0)
                return -1; /* not what is tested: fail the test */
        int r = result(ftruncate(fd, 16));
        (void) close(fd);
        return r;
}
static int probe_slots_lock_other_byte(void) {
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1 };
        return result(fcntl(CONNSLOT_FD, F_OFD_SETLK, &fl));
}
static int probe_slots_reopened_read_lock(void) {
        /* a read-only open is allowed; a read lock on it would still fill a slot */
        struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1 };
        int fd = open(slots_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1; /* not what is tested: fail the test */
        int r = result(fcntl(fd, F_OFD_SETLK, &fl));
        if (r == EPERM) {
                fl.l_type = F_RDLCK;
                r = result(fcntl(fd, F_SETLK, &fl)); /* a process-owned lock, the same */
        }
        (void) close(fd);
        return r;
}
static int probe_slots_dup(void) {
        int fd = dup(CONNSLOT_FD);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_slots_dup3(void) {
        int fd = dup3(CONNSLOT_FD, 100, O_CLOEXEC);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_slots_dupfd(void) {
        int fd = fcntl(CONNSLOT_FD, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_slots_shared_mapping(void) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, CONNSLOT_FD, 0);
        if (p != MAP_FAILED)
                (void) munmap(p, 4096);
        return p == MAP_FAILED ? errno : 0;
}
static int probe_write_above(void) {
        return result(write(CONNSLOT_FD + 88, "x", 1)); /* a pipe put there before the filter */
}
static int probe_fcntl_setfl(void) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return errno;
        int flags = fcntl(p[0], F_GETFL);
        int r = flags < 0 ? errno : result(fcntl(p[0], F_SETFL, flags | O_NONBLOCK));
        if (r == 0) {
                int fd = fcntl(p[0], F_DUPFD_CLOEXEC, 3);
                r = result(fd);
                if (fd >= 0)
                        (void) close(fd);
        }
        (void) close(p[0]);
        (void) close(p[1]);
        return r;
}

static int probe_write_open(void) {
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (fd >= 0)
                (void) close(fd);
        return result(fd);
}
static int probe_execve(void) {
        char *const argv[] = { (char *) "/nonexistent/difysandbox-probe", NULL };
        return result(execve(argv[0], argv, argv + 1)); /* ENOENT if it got through */
}
static int probe_clone(void) {
        /* CLONE_SIGHAND without CLONE_VM is EINVAL in the kernel: no process even if it got through */
        return result(syscall(SYS_clone, CLONE_SIGHAND, NULL, NULL, NULL, 0));
}
static int probe_unshare(void) {
        return result(unshare(CLONE_NEWUSER)); /* a user namespace for nothing, if it got through */
}
static int probe_signal_parent(void) {
        return result(kill(getppid(), 0)); /* signal 0: a permission check only */
}
static int probe_ptrace(void) {
        return result(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}
static int probe_read_parent_memory(void) {
        char buf[1];
        static char there[1];
        struct iovec local = { buf, 1 }, remote = { there, 1 }; /* the parent's copy, same address */
        return result(process_vm_readv(getppid(), &local, 1, &remote, 1, 0));
}
static int probe_dumpable_again(void) {
        return result(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}
static int probe_personality(void) {
        return result(personality(0xffffffff)); /* a query, if it got through */
}
static int probe_mkdir(void) {
        char path[64];
        (void) snprintf(path, sizeof(path), "/tmp/worker-filter-probe-%d", (int) getpid());
        int r = result(mkdir(path, 0700));
        if (r == 0)
                (void) rmdir(path);
        return r;
}
static int probe_session_keyring(void) {
        /* a query of the session keyring's id, without creating one, if it got through */
        return result(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}
static int probe_tty_ioctl(void) {
        struct termios t;
        return result(ioctl(STDIN_FILENO, TCGETS, &t));
}

/* NULL: the child compiles the filter and loads it, as difysandbox-worker does. Otherwise the child loads
 * this, compiled once by the parent, as a worker of `difysandbox serve` does: its PID is the child's only
 * once worker_filter_load() patched it in. */
static const SeccompProgram *compiled_by_parent;

/* Set: the child first loads a filter that denies seccomp() with EPERM and allows the rest, as a unit's
 * SystemCallFilter=@system-service does (an operator's drop-in on difysandbox@.service). */
static bool outer_denies_seccomp;

static int outer_filter_load(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r = ctx ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(seccomp), 0) : -ENOMEM;

        if (r >= 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r;
}

/* Set: the child takes a connection slot in this state dir before the filter, as a worker does, and puts
 * a pipe's write end at CONNSLOT_FD + 88 (an fd no worker has). */
static const char *slot_state_dir;

static int slot_take(void) {
        ConnSlot *slot = NULL; /* held until the child exits */
        int p[2];

        if (connslot_take(slot_state_dir, 64, &slot) < 0 || fcntl(CONNSLOT_FD, F_GETFD) < 0)
                return -1;
        if (pipe2(p, 0) < 0 || dup3(p[1], CONNSLOT_FD + 88, O_CLOEXEC) < 0)
                return -1;
        return 0;
}

/* Forks, loads the filter in the child, runs probe there; returns its outcome (0 or an errno). */
static int filtered(Probe probe) {
        int p[2], status, outcome = -1;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (outer_denies_seccomp && outer_filter_load() < 0)
                        _exit(2);
                if (slot_state_dir && slot_take() < 0)
                        _exit(3);
                int r = compiled_by_parent ? worker_filter_load(compiled_by_parent) : worker_filter_apply();
                int o = r < 0 ? 1000 - r : probe();
                _exit(write(p[1], &o, sizeof(o)) == (ssize_t) sizeof(o) ? 0 : 1);
        }
        (void) close(p[1]);
        assert_int_equal(read(p[0], &outcome, sizeof(outcome)), (ssize_t) sizeof(outcome));
        (void) close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return outcome;
}

static void what_a_worker_does_still_works(void) {
        assert_int_equal(filtered(probe_write), 0);
        assert_int_equal(filtered(probe_unix_socket), 0);
        assert_int_equal(filtered(probe_anonymous_memory), 0);
        assert_int_equal(filtered(probe_memfd), 0);
        assert_int_equal(filtered(probe_read_open), 0);
        assert_int_equal(filtered(probe_read_open_directory), 0);
        assert_int_equal(filtered(probe_shared_lock), 0);
        assert_int_equal(filtered(probe_signal_self), 0);
        assert_int_equal(filtered(probe_fcntl_setfl), 0);
}

static void what_the_filter_is_for_fails_with_eperm(void) {
        const struct {
                const char *name;
                Probe probe;
        } denied[] = {
                { "socket(AF_INET)", probe_inet_socket },
                { "socket(AF_NETLINK)", probe_netlink_socket },
                { "mmap(PROT_EXEC)", probe_exec_mapping },
                { "mprotect(PROT_EXEC)", probe_mprotect_exec },
                { "open(O_WRONLY)", probe_write_open },
                { "open(O_TMPFILE)", probe_tmpfile },
                { "flock(LOCK_EX)", probe_exclusive_lock },
                { "execve", probe_execve },
                { "clone", probe_clone },
                { "unshare", probe_unshare },
                { "kill(parent)", probe_signal_parent },
                { "ptrace", probe_ptrace },
                { "process_vm_readv(parent)", probe_read_parent_memory },
                { "prctl(PR_SET_DUMPABLE, 1)", probe_dumpable_again },
                { "personality", probe_personality },
                { "mkdir", probe_mkdir },
                { "ioctl(TCGETS)", probe_tty_ioctl },
                /* the kernel keyrings: no worker needs them, and they outlive a connection */
                { "keyctl", probe_session_keyring },
        };
        for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
                int outcome = filtered(denied[i].probe);
                if (outcome != EPERM)
                        fail_msg("%s%s: got %s, not EPERM", denied[i].name,
                                 compiled_by_parent ? " (compiled by the parent)" : "",
                                 outcome ? strerror(outcome) : "success");
        }
}

/* A taken-over worker can neither grow the connection slots file (the finding: 1 MiB into /run) nor lock
 * a slot that is not its own, nor write to an fd no worker writes; and the file is still empty after. */
static void the_slots_file_is_out_of_reach(void) {
        const struct {
                const char *name;
                Probe probe;
        } denied[] = {
                { "pwrite64(slots, at 1 MiB)", probe_slots_pwrite_far },
                { "write(slots)", probe_slots_write },
                { "write(slots | 1 << 32)", probe_slots_write_high_bits },
                { "writev(slots)", probe_slots_writev },
                { "ftruncate(slots)", probe_slots_ftruncate },
                { "ftruncate(a memfd)", probe_ftruncate_any },
                { "fcntl(slots, F_OFD_SETLK, another byte)", probe_slots_lock_other_byte },
                { "fcntl(slots opened again, F_OFD_SETLK/F_SETLK)", probe_slots_reopened_read_lock },
                { "dup(slots)", probe_slots_dup },
                { "dup3(slots)", probe_slots_dup3 },
                { "fcntl(slots, F_DUPFD_CLOEXEC)", probe_slots_dupfd },
                { "mmap(slots, MAP_SHARED)", probe_slots_shared_mapping },
                { "write(an fd from CONNSLOT_FD on)", probe_write_above },
        };
        char dir[] = "/tmp/test-worker-filter-XXXXXX", connections[64];
        unsigned failed = 0;
        struct stat st;

        assert_non_null(mkdtemp(dir));
        (void) snprintf(connections, sizeof(connections), "%s/connections", dir);
        assert_int_equal(mkdir(connections, 0700), 0);
        (void) snprintf(slots_path, sizeof(slots_path), "%s/slots", connections);
        slot_state_dir = dir;
        for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
                int outcome = filtered(denied[i].probe);
                if (outcome != EPERM) { /* each one named, then the test fails */
                        print_error("%s%s: got %s, not EPERM\n", denied[i].name,
                                    compiled_by_parent ? " (compiled by the parent)" : "",
                                    outcome ? strerror(outcome) : "success");
                        failed++;
                }
        }
        assert_int_equal(filtered(probe_write), 0); /* a worker's own writes, with a slot held */
        assert_int_equal(filtered(probe_memfd), 0);
        slot_state_dir = NULL;
        assert_int_equal(stat(slots_path, &st), 0);
        assert_int_equal(st.st_size, 0);
        for (unsigned k = 0; k < 8; k++) {
                char fifo[96];
                (void) snprintf(fifo, sizeof(fifo), "%s/evict-%u", connections, k);
                (void) unlink(fifo);
        }
        assert_int_equal(unlink(slots_path), 0);
        assert_int_equal(rmdir(connections), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(failed, 0);
}

/* The filter goes in (a worker serves, an INET socket is refused) where seccomp() itself is denied. */
static void the_filter_loads_where_seccomp_is_denied(void) {
        outer_denies_seccomp = true;
        assert_int_equal(filtered(probe_write), 0);
        assert_int_equal(filtered(probe_inet_socket), EPERM);
        outer_denies_seccomp = false;
}

/* check both ways: compiled by the worker itself, and compiled once by a parent (serve) for every child. */
static void both_ways(void (*check)(void)) {
        _cleanup_(seccomp_program_freep) SeccompProgram *p = NULL;

        compiled_by_parent = NULL;
        check();
        assert_int_equal(worker_filter_compile(&p), 0);
        compiled_by_parent = p;
        check();
        compiled_by_parent = NULL;
}

static void test_what_a_worker_does_still_works(void **state) {
        both_ways(what_a_worker_does_still_works); /* kill(itself) among them: its own PID patched in */
}

static void test_what_the_filter_is_for_fails_with_eperm(void **state) {
        both_ways(what_the_filter_is_for_fails_with_eperm); /* kill(parent): not the compiler's PID */
}

static void test_the_slots_file_is_out_of_reach(void **state) {
        both_ways(the_slots_file_is_out_of_reach);
}

static void test_the_filter_loads_where_seccomp_is_denied(void **state) {
        both_ways(the_filter_loads_where_seccomp_is_denied);
}

/* Workers share one UID: a dumpable one's /proc/PID/mem and environ belong to that UID, so another
 * worker could open them. Non-dumpable, the kernel hands them to root. The child takes an unprivileged
 * UID first, as a worker has, so that the owner tells the two apart. */
static void test_a_worker_is_not_dumpable(void **state) {
        int ready[2], done[2], status;
        struct stat st;
        char path[64], byte;
        pid_t pid;

        if (geteuid() != 0)
                skip(); /* needs to become another user */
        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        assert_int_equal(pipe2(done, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) close(ready[0]);
                (void) close(done[1]); /* EOF on done[0] once the parent closes its end */
                /* setuid() leaves it non-dumpable (fs.suid_dumpable 0); execve() of difysandbox-worker by
                 * systemd, after User=, makes it dumpable again: so does this prctl(). */
                if (setgid(65534) < 0 || setuid(65534) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 ||
                    worker_filter_apply() < 0)
                        _exit(1);
                (void) !write(ready[1], "r", 1);
                (void) !read(done[0], &byte, 1);
                _exit(0);
        }
        (void) close(ready[1]);
        (void) close(done[0]);
        assert_int_equal(read(ready[0], &byte, 1), 1);
        for (size_t i = 0; i < 2; i++) {
                (void) snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, i ? "environ" : "mem");
                assert_int_equal(stat(path, &st), 0);
                if (st.st_uid != 0)
                        fail_msg("%s belongs to UID %u: the worker is dumpable", path, (unsigned) st.st_uid);
        }
        (void) close(done[1]);
        (void) close(ready[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_what_a_worker_does_still_works),
                cmocka_unit_test(test_what_the_filter_is_for_fails_with_eperm),
                cmocka_unit_test(test_the_slots_file_is_out_of_reach),
                cmocka_unit_test(test_the_filter_loads_where_seccomp_is_denied),
                cmocka_unit_test(test_a_worker_is_not_dumpable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
