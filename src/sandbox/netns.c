/* netns: see netns.h. */

#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"

static int loopback_up(void) {
        _cleanup_close_ int fd = -EBADF;
        struct ifreq ifr = { 0 };

        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        memcpy(ifr.ifr_name, "lo", sizeof("lo"));
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}

int netns_enter_new(int template_fd) {
        if (setns(template_fd, CLONE_NEWNET) < 0)
                return -errno;
        if (unshare(CLONE_NEWNET) < 0)
                return -errno;
        return 0;
}

int netns_open_proxy_listener(int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(EGRESS_PROXY_PORT),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        int r;

        r = loopback_up();
        if (r < 0)
                return r;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        if (listen(fd, 64) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int netns_send_fd(int sock, int fd) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = { 0 };
        char byte = 'F';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
        if (sendmsg(sock, &msg, MSG_NOSIGNAL) != 1)
                return -errno;
        return 0;
}

int netns_receive_fd(int sock, int *ret_fd) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = { 0 };
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        struct cmsghdr *cmsg;
        ssize_t n;
        int fd;

        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -EPIPE; /* the child died before it got there: its status report says why */
        cmsg = CMSG_FIRSTHDR(&msg);
        if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
            cmsg->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EBADMSG;
        memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
        *ret_fd = fd;
        return 0;
}
