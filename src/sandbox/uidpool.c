/* uidpool: see uidpool.h. */

#include "uidpool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/parse.h"

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

static int inode_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The inodes of the range's lock files (sorted), and their filesystem. No file: *ret_n is 0. */
static int lock_inodes(const char *state_dir, uid_t uid_min, uid_t uid_max, uint64_t **ret, size_t *ret_n,
                       dev_t *ret_dev) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ uint64_t *inodes = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        struct stat st;

        if (asprintf(&dir, "%s/uids", state_dir) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d && errno != ENOENT)
                return -errno;
        while (d && (de = readdir(d))) {
                uint32_t uid;

                if (parse_uint32(de->d_name, &uid) < 0 || uid < uid_min || uid > uid_max)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n == cap) {
                        uint64_t *p = reallocarray(inodes, cap = cap ? cap * 2 : 64, sizeof(uint64_t));
                        if (!p)
                                return -ENOMEM;
                        inodes = p;
                }
                inodes[n++] = st.st_ino;
                *ret_dev = st.st_dev;
        }
        qsort(inodes, n, sizeof(uint64_t), inode_cmp);
        *ret = TAKE_PTR(inodes);
        *ret_n = n;
        return 0;
}

/* Counted from /proc/locks rather than by trying the locks: a take at the same instant would skip the UIDs
 * being tried, and counting creates nothing. A UID is held when a FLOCK is on its lock file's inode. */
int uidpool_count_free(const char *state_dir, uid_t uid_min, uid_t uid_max) {
        _cleanup_(fclosep) FILE *locks = NULL;
        _cleanup_free_ uint64_t *inodes = NULL;
        _cleanup_free_ bool *counted = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n = 0, line_size = 0, held = 0, size;
        dev_t dev = 0;
        int r;

        if (uid_min == 0 || uid_max < uid_min)
                return -EINVAL;
        size = (size_t) (uid_max - uid_min) + 1;
        if (size > INT_MAX)
                return -ERANGE;
        r = lock_inodes(state_dir, uid_min, uid_max, &inodes, &n, &dev);
        if (r < 0 || n == 0)
                return r < 0 ? r : (int) size;

        /* Each lock file counts once, however many lines name it: /proc/locks is made as it is read, and
         * a line can show twice when other processes take or drop locks between two reads of it. */
        counted = calloc(n, sizeof(bool));
        if (!counted)
                return -ENOMEM;
        locks = fopen("/proc/locks", "re");
        if (!locks)
                return -errno;
        /* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; waiters are "1: -> FLOCK ..." */
        while (getline(&line, &line_size, locks) > 0) {
                unsigned major, minor;
                uint64_t ino;
                char type[16];

                if (sscanf(line, "%*u: %15s %*s %*s %*d %x:%x:%" SCNu64, type, &major, &minor, &ino) != 4 ||
                    !streq(type, "FLOCK") || makedev(major, minor) != dev)
                        continue;
                const uint64_t *found = bsearch(&ino, inodes, n, sizeof(uint64_t), inode_cmp);
                if (found && !counted[found - inodes]) {
                        counted[found - inodes] = true;
                        held++;
                }
        }
        return held >= size ? 0 : (int) (size - held);
}
