/* Unit tests for src/sandbox/netns-template.c and netns_enter_new() (netns.c): a namespace made from the
 * template has a TCP hash table of its own and is not the template's, the host's values stay as they
 * were, and the template can be made where /proc/sys is read-only (ProtectKernelTunables= of the runner's
 * unit). Needs root and Linux 6.1+, else skips. Every namespace is made in a forked child. */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/netns-template.h"
#include "sandbox/netns.h"

#define CHILD_EHASH "/proc/sys/net/ipv4/tcp_child_ehash_entries"
#define EHASH "/proc/sys/net/ipv4/tcp_ehash_entries"

/* Root makes namespaces; Linux 6.1+ has per-namespace TCP hash tables. */
static bool possible(void) {
        return geteuid() == 0 && access(CHILD_EHASH, F_OK) == 0;
}

static long read_number(const char *path) {
        char buf[32] = { 0 };
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -1000000000L - errno;
        n = read(fd, buf, sizeof(buf) - 1);
        (void) close(fd);
        return n > 0 ? strtol(buf, NULL, 10) : -1000000000L;
}

static ino_t netns_inode(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* What a run's child sees once netns_enter_new() made its namespace. */
typedef struct {
        int error;
        long tcp_ehash_entries;
        ino_t netns;
} Made;

/* Runs body(arg) in a forked child (namespaces made there stay there) and returns what it reported. */
static Made in_child(Made (*body)(int), int arg) {
        Made made = { 0 };
        int p[2], status;
        pid_t pid;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Made m = body(arg);
                _exit(write(p[1], &m, sizeof(m)) == (ssize_t) sizeof(m) ? 0 : 1);
        }
        (void) close(p[1]);
        assert_int_equal(read(p[0], &made, sizeof(made)), (ssize_t) sizeof(made));
        (void) close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return made;
}

/* As a run's child does. */
static Made enter_new(int template_fd) {
        Made m = { .error = netns_enter_new(template_fd) };

        if (m.error == 0) {
                m.tcp_ehash_entries = read_number(EHASH);
                m.netns = netns_inode("/proc/self/ns/net");
        }
        return m;
}

static Made make_from(int template_fd) {
        return in_child(enter_new, template_fd);
}

static void test_a_namespace_made_from_the_template_has_a_table_of_its_own(void **state) {
        if (!possible())
                skip();
        long host_child = read_number(CHILD_EHASH), host_table = read_number(EHASH);
        ino_t host_netns = netns_inode("/proc/self/ns/net");
        struct stat template_st;
        int fd = -EBADF;

        assert_int_equal(netns_template_open(&fd), 0);
        assert_int_equal(fstat(fd, &template_st), 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);

        Made first = make_from(fd), second = make_from(fd);
        assert_int_equal(first.error, 0);
        assert_int_equal(second.error, 0);
        assert_int_equal(first.tcp_ehash_entries, NETNS_TCP_HASH_ENTRIES);
        assert_int_equal(second.tcp_ehash_entries, NETNS_TCP_HASH_ENTRIES);
        /* each its own: neither the template's, nor the host's, nor the other's */
        assert_true(first.netns != 0 && first.netns != template_st.st_ino && first.netns != host_netns);
        assert_true(second.netns != first.netns && second.netns != template_st.st_ino);

        /* the host's own values, and where this process is, did not change */
        assert_int_equal(read_number(CHILD_EHASH), host_child);
        assert_int_equal(read_number(EHASH), host_table);
        assert_int_equal(netns_inode("/proc/self/ns/net"), host_netns);
        assert_int_equal(close(fd), 0);
}

/* As systemd's ProtectKernelTunables= leaves the runner: /proc/sys bound read-only onto itself. */
static int protect_kernel_tunables(void) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("/proc/sys", "/proc/sys", NULL, MS_BIND | MS_REC, NULL) < 0 ||
            mount(NULL, "/proc/sys", NULL,
                  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return -errno;
        return 0;
}

/* The runner's part under ProtectKernelTunables=: the template, then a run's namespace made from it. */
static Made template_under_read_only_proc_sys(int unused) {
        Made m = { .error = protect_kernel_tunables() };
        int fd = -EBADF, w;

        if (m.error == 0) {
                /* the premise: this process cannot write there */
                w = open(CHILD_EHASH, O_WRONLY | O_CLOEXEC);
                m.error = w >= 0 ? -EEXIST : (errno == EROFS ? 0 : -errno);
                if (w >= 0)
                        (void) close(w);
        }
        if (m.error == 0)
                m.error = netns_template_open(&fd);
        if (m.error == 0)
                m = make_from(fd);
        return m;
}

static void test_the_template_is_made_where_proc_sys_is_read_only(void **state) {
        if (!possible())
                skip();
        Made made = in_child(template_under_read_only_proc_sys, 0);
        assert_int_equal(made.error, 0);
        assert_int_equal(made.tcp_ehash_entries, NETNS_TCP_HASH_ENTRIES);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_namespace_made_from_the_template_has_a_table_of_its_own),
                cmocka_unit_test(test_the_template_is_made_where_proc_sys_is_read_only),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
