/* netns-template: see netns-template.h. */

#include "netns-template.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "netns.h"

#define CHILD_EHASH_SYSCTL "/proc/sys/net/ipv4/tcp_child_ehash_entries"

/* In the namespace that is current (the file under /proc/sys/net is the opener's namespace's). */
static int child_ehash_write(void) {
        _cleanup_close_ int fd = open(CHILD_EHASH_SYSCTL, O_WRONLY | O_CLOEXEC);
        char value[16];
        int n;

        if (fd < 0)
                return -errno;
        n = snprintf(value, sizeof(value), "%u", NETNS_TCP_HASH_ENTRIES);
        if (write(fd, value, (size_t) n) != n)
                return -errno;
        return 0;
}

/* The helper: a namespace of its own, the value set in it, its fd handed to the parent over sock. */
static int template_make(int sock) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        /* A mount namespace too, private, so that making /proc/sys writable below stays ours. */
        if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0)
                return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        r = child_ehash_write();
        if (r == -EROFS) {
                /* ProtectKernelTunables= bound /proc/sys read-only onto itself: writable again, in this
                 * process's copy of the mounts only, for a value of this namespace only. */
                if (mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          NULL) < 0)
                        return -errno;
                r = child_ehash_write();
        }
        if (r < 0)
                return r;
        fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return netns_send_fd(sock, fd);
}

int netns_template_open(int *ret_fd) {
        _cleanup_close_ int parent_end = -EBADF;
        int sv[2], status, fd = -EBADF, r;
        pid_t pid;

        if (access(CHILD_EHASH_SYSCTL, F_OK) < 0)
                return -errno; /* ENOENT: a kernel before 6.1 */
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        parent_end = sv[0];
        pid = fork();
        if (pid < 0) {
                r = -errno;
                (void) close(sv[1]);
                return r;
        }
        if (pid == 0) {
                (void) close(sv[0]);
                r = template_make(sv[1]);
                /* The parent learns the error from the exit status: an errno fits in it. */
                _exit(r < 0 ? (-r < 255 ? -r : 255) : 0);
        }
        (void) close(sv[1]);
        r = netns_receive_fd(parent_end, &fd);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                if (fd >= 0)
                        (void) close(fd);
                return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
        }
        if (r < 0)
                return r;
        *ret_fd = fd;
        return 0;
}
