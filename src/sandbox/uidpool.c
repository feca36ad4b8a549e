/* uidpool: see uidpool.h. */

#include "uidpool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static int open_dir(const char *state_dir, int *ret_fd) {
        _cleanup_close_ int state_fd = -EBADF;
        int fd;

        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        if (mkdirat(state_fd, "uids", 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(state_fd, "uids", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

/* Opens the lock file of uid and tries to lock it; returns the locked fd, -EWOULDBLOCK when held. */
static int try_lock(int dir_fd, uid_t uid) {
        _cleanup_close_ int fd = -EBADF;
        char name[3 * sizeof(uid_t) + 1];

        if (snprintf(name, sizeof(name), "%u", (unsigned) uid) >= (int) sizeof(name))
                return -ENAMETOOLONG;
        fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int uidpool_take(const char *state_dir, uid_t uid_min, uid_t uid_max, UidLease **ret) {
        _cleanup_close_ int dir_fd = -EBADF;
        unsigned span, start = 0;
        int r;

        if (uid_min == 0 || uid_max < uid_min)
                return -EINVAL; /* never root, never an empty range */
        r = open_dir(state_dir, &dir_fd);
        if (r < 0)
                return r;

        /* Start at a random place so that concurrent takers rarely contend for the same lock. */
        span = (unsigned) (uid_max - uid_min) + 1;
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (unsigned) getpid();

        for (unsigned i = 0; i < span; i++) {
                uid_t uid = uid_min + (uid_t) ((start + i) % span);
                UidLease *lease;
                int fd;

                fd = try_lock(dir_fd, uid);
                if (fd == -EWOULDBLOCK)
                        continue;
                if (fd < 0)
                        return fd;

                lease = malloc(sizeof(*lease));
                if (!lease) {
                        (void) safe_close(fd);
                        return -ENOMEM;
                }
                *lease = (UidLease){ .uid = uid, .fd = fd };
                *ret = lease;
                return 0;
        }
        return -EBUSY;
}

int uidpool_take_uid(const char *state_dir, uid_t uid, UidLease **ret) {
        _cleanup_close_ int dir_fd = -EBADF, fd = -EBADF;
        UidLease *lease;
        int r;

        if (uid == 0)
                return -EINVAL;
        r = open_dir(state_dir, &dir_fd);
        if (r < 0)
                return r;
        fd = try_lock(dir_fd, uid);
        if (fd == -EWOULDBLOCK)
                return -EBUSY;
        if (fd < 0)
                return fd;
        lease = malloc(sizeof(*lease));
        if (!lease)
                return -ENOMEM;
        *lease = (UidLease){ .uid = uid, .fd = TAKE_FD(fd) };
        *ret = lease;
        return 0;
}

UidLease *uidpool_release(UidLease *lease) {
        if (lease) {
                (void) safe_close(lease->fd); /* drops the lock */
                free(lease);
        }
        return NULL;
}

int uidpool_count_free(const char *state_dir, uid_t uid_min, uid_t uid_max) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r, n = 0;

        if (uid_min == 0 || uid_max < uid_min)
                return -EINVAL;
        r = open_dir(state_dir, &dir_fd);
        if (r < 0)
                return r;
        for (uid_t uid = uid_min;; uid++) {
                int fd = try_lock(dir_fd, uid);
                if (fd >= 0) {
                        n++;
                        (void) safe_close(fd);
                } else if (fd != -EWOULDBLOCK)
                        return fd;
                if (uid == uid_max)
                        break;
        }
        return n;
}
