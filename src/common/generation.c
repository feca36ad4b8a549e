/* generation: see generation.h. */

#include "generation.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup-io.h"
#include "cleanup.h"
#include "parse.h"

#define CURRENT_NAME "current"
#define CURRENT_TMP_NAME ".current.tmp"
#define LOCK_NAME ".install.lock"
/* "gen-" or ".gen-", the decimal digits of a uint64_t, ".tmp" or ".old", NUL */
#define GEN_NAME_MAX (5 + 20 + 4 + 1)
/* How often generation_acquire() resolves current again when a collector removed what it found. */
#define ACQUIRE_ATTEMPTS 16

/* name is prefix, a number without leading zeros (> 0), suffix: returns the number, else 0. */
static uint64_t gen_number_of(const char *name, const char *prefix, const char *suffix) {
        size_t lp = strlen(prefix), ls = strlen(suffix), ln = strlen(name);
        char digits[21];
        uint64_t n;

        if (ln <= lp + ls || ln - lp - ls >= sizeof(digits) || strncmp(name, prefix, lp) != 0 ||
            strcmp(name + ln - ls, suffix) != 0 || name[lp] == '0')
                return 0;
        memcpy(digits, name + lp, ln - lp - ls);
        digits[ln - lp - ls] = '\0';
        if (parse_uint64(digits, &n) < 0)
                return 0;
        return n;
}

static int gen_name(char buf[static GEN_NAME_MAX], const char *prefix, uint64_t number, const char *suffix) {
        int n = snprintf(buf, GEN_NAME_MAX, "%s%" PRIu64 "%s", prefix, number, suffix);

        if (n < 0 || n >= GEN_NAME_MAX)
                return -ENAMETOOLONG;
        return 0;
}

static int open_packages_dir(const char *packages_dir, int *ret_fd) {
        int fd;

        if (!packages_dir || packages_dir[0] != '/')
                return -EINVAL;
        fd = open(packages_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

/* The number current names; 0 when there is no symlink. -EBADMSG when it is not "gen-<N>". */
static int read_current(int dir_fd, uint64_t *ret) {
        char target[GEN_NAME_MAX];
        ssize_t n;
        uint64_t number;

        n = readlinkat(dir_fd, CURRENT_NAME, target, sizeof(target));
        if (n < 0) {
                if (errno == ENOENT) {
                        *ret = 0;
                        return 0;
                }
                if (errno == EINVAL)
                        return -EBADMSG; /* not a symlink */
                return -errno;
        }
        if ((size_t) n >= sizeof(target))
                return -EBADMSG;
        target[n] = '\0';
        number = gen_number_of(target, "gen-", "");
        if (number == 0)
                return -EBADMSG;
        *ret = number;
        return 0;
}

int generation_current(const char *packages_dir, uint64_t *ret) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        r = open_packages_dir(packages_dir, &dir_fd);
        if (r == -ENOENT) {
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r;
        return read_current(dir_fd, ret);
}

/* ---- acquire / release (runs) ---- */

int generation_acquire(const char *packages_dir, Generation *ret) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        r = open_packages_dir(packages_dir, &dir_fd);
        if (r == -ENOENT) {
                *ret = GENERATION_NULL;
                return 0;
        }
        if (r < 0)
                return r;

        for (unsigned attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
                _cleanup_close_ int fd = -EBADF;
                _cleanup_free_ char *path = NULL;
                char name[GEN_NAME_MAX];
                struct stat st_fd, st_name;
                uint64_t number;

                r = read_current(dir_fd, &number);
                if (r < 0)
                        return r;
                if (number == 0) {
                        *ret = GENERATION_NULL;
                        return 0;
                }
                r = gen_name(name, "gen-", number, "");
                if (r < 0)
                        return r;
                fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        if (errno == ENOENT)
                                continue; /* collected between readlink and open: current moved on */
                        return -errno;
                }
                /* Waits while a collector holds it: it then either gave up on it or removed it. */
                while (flock(fd, LOCK_SH) < 0)
                        if (errno != EINTR)
                                return -errno;
                if (fstat(fd, &st_fd) < 0)
                        return -errno;
                if (fstatat(dir_fd, name, &st_name, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return -errno;
                }
                if (st_fd.st_dev != st_name.st_dev || st_fd.st_ino != st_name.st_ino || st_fd.st_nlink == 0)
                        continue; /* renamed away for removal while we waited */

                if (asprintf(&path, "%s/%s", packages_dir, name) < 0)
                        return -ENOMEM;
                *ret = (Generation){ .number = number, .dir_fd = TAKE_FD(fd), .path = TAKE_PTR(path) };
                return 0;
        }
        return -ESTALE;
}

void generation_release(Generation *g) {
        if (!g)
                return;
        (void) safe_close(g->dir_fd);
        free(g->path);
        *g = GENERATION_NULL;
}

/* ---- trees ---- */

static int remove_children(int fd);

/* Removes dir_fd/name, a file or a whole tree, without following symlinks. 0 when it does not exist. */
static int remove_tree_at(int dir_fd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode)) {
                if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                        return -errno;
                return 0;
        }
        /* A directory its owner cannot list or change (a package may ship one) is opened up first. */
        if ((st.st_mode & 0700) != 0700)
                (void) fchmodat(dir_fd, name, 0700, 0); /* if it fails, opening or unlinking says why */
        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = remove_children(fd);
        if (r < 0)
                return r;
        if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int remove_children(int fd) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        r = opendir_dup(fd, &d);
        if (r < 0)
                return r;
        for (;;) {
                struct dirent *de;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        return 0;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = remove_tree_at(dirfd(d), de->d_name);
                if (r < 0)
                        return r;
        }
}

/* Sets the modes of everything below fd as generation_commit() promises. */
static int normalize_children(int fd) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        r = opendir_dup(fd, &d);
        if (r < 0)
                return r;
        for (;;) {
                struct dirent *de;
                struct stat st;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        return 0;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;

                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = -EBADF;

                        if ((st.st_mode & 07777) != 0755 && fchmodat(dirfd(d), de->d_name, 0755, 0) < 0)
                                return -errno;
                        sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub < 0)
                                return -errno;
                        r = normalize_children(sub);
                        if (r < 0)
                                return r;
                } else if (S_ISREG(st.st_mode)) {
                        mode_t mode = (st.st_mode & 0100) ? 0755 : 0644;

                        if ((st.st_mode & 07777) != mode && fchmodat(dirfd(d), de->d_name, mode, 0) < 0)
                                return -errno;
                } else if (!S_ISLNK(st.st_mode)) {
                        /* a fifo or socket a build left behind: nothing a run may open */
                        if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                                return -errno;
                }
        }
}

/* ---- installer ---- */

int generation_begin(const char *packages_dir, uint64_t *ret_number, int *ret_lock_fd) {
        _cleanup_close_ int dir_fd = -EBADF, lock_fd = -EBADF;
        _cleanup_(closedirp) DIR *d = NULL;
        char name[GEN_NAME_MAX];
        uint64_t max = 0, current;
        int r;

        if (!packages_dir || packages_dir[0] != '/')
                return -EINVAL;
        if (mkdir(packages_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = open_packages_dir(packages_dir, &dir_fd);
        if (r < 0)
                return r;

        lock_fd = openat(dir_fd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (lock_fd < 0)
                return -errno;
        while (flock(lock_fd, LOCK_EX) < 0)
                if (errno != EINTR)
                        return -errno;

        r = read_current(dir_fd, &current);
        if (r < 0 && r != -EBADMSG)
                return r;
        if (r >= 0 && current > max)
                max = current;

        r = opendir_dup(dir_fd, &d);
        if (r < 0)
                return r;
        for (;;) {
                struct dirent *de;
                uint64_t n, stale;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        break;
                }
                n = gen_number_of(de->d_name, "gen-", "");
                stale = gen_number_of(de->d_name, ".gen-", ".tmp");
                if (stale == 0)
                        stale = gen_number_of(de->d_name, ".gen-", ".old");
                if (n > max)
                        max = n;
                if (stale > max)
                        max = stale;
                if (stale > 0) {
                        /* We hold the install lock: whoever was building or removing it is dead. */
                        r = remove_tree_at(dir_fd, de->d_name);
                        if (r < 0)
                                return r;
                }
        }
        if (max == UINT64_MAX)
                return -ERANGE;

        r = gen_name(name, ".gen-", max + 1, ".tmp");
        if (r < 0)
                return r;
        if (mkdirat(dir_fd, name, 0755) < 0)
                return -errno;
        if (fchmodat(dir_fd, name, 0755, 0) < 0) /* whatever the umask */
                return -errno;

        *ret_number = max + 1;
        *ret_lock_fd = TAKE_FD(lock_fd);
        return 0;
}

int generation_remove_entry(const char *packages_dir, uint64_t number, const char *name) {
        _cleanup_close_ int dir_fd = -EBADF, tmp_fd = -EBADF;
        char tmp[GEN_NAME_MAX];
        int r;

        if (!name || !*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        r = gen_name(tmp, ".gen-", number, ".tmp");
        if (r < 0)
                return r;
        r = open_packages_dir(packages_dir, &dir_fd);
        if (r < 0)
                return r;
        tmp_fd = openat(dir_fd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (tmp_fd < 0)
                return -errno;
        return remove_tree_at(tmp_fd, name);
}

int generation_commit(const char *packages_dir, uint64_t number) {
        _cleanup_close_ int dir_fd = -EBADF, tmp_fd = -EBADF;
        char tmp[GEN_NAME_MAX], final[GEN_NAME_MAX];
        int r;

        if (number == 0)
                return -EINVAL;
        r = gen_name(tmp, ".gen-", number, ".tmp");
        if (r < 0)
                return r;
        r = gen_name(final, "gen-", number, "");
        if (r < 0)
                return r;
        r = open_packages_dir(packages_dir, &dir_fd);
        if (r < 0)
                return r;

        tmp_fd = openat(dir_fd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (tmp_fd < 0)
                return -errno;
        if (fchmod(tmp_fd, 0755) < 0)
                return -errno;
        r = normalize_children(tmp_fd);
        if (r < 0)
                return r;
        /* Everything of the generation is on disk before a name leads to it. */
        if (syncfs(tmp_fd) < 0)
                return -errno;

        if (renameat(dir_fd, tmp, dir_fd, final) < 0)
                return -errno;
        if (unlinkat(dir_fd, CURRENT_TMP_NAME, 0) < 0 && errno != ENOENT)
                return -errno;
        if (symlinkat(final, dir_fd, CURRENT_TMP_NAME) < 0)
                return -errno;
        if (renameat(dir_fd, CURRENT_TMP_NAME, dir_fd, CURRENT_NAME) < 0) {
                r = -errno;
                (void) unlinkat(dir_fd, CURRENT_TMP_NAME, 0); /* the error that matters is the rename's */
                return r;
        }
        if (fsync(dir_fd) < 0)
                return -errno;
        return 0;
}

int generation_abort(const char *packages_dir, uint64_t number) {
        _cleanup_close_ int dir_fd = -EBADF;
        char tmp[GEN_NAME_MAX];
        int r;

        if (number == 0)
                return -EINVAL;
        r = gen_name(tmp, ".gen-", number, ".tmp");
        if (r < 0)
                return r;
        r = open_packages_dir(packages_dir, &dir_fd);
        if (r < 0)
                return r;
        return remove_tree_at(dir_fd, tmp);
}

/* Locks dir_fd/name exclusively without waiting, renames it to .gen-<N>.old and removes it. Returns 1
 * when it removed it, 0 when a run holds it. */
static int collect_one(int dir_fd, const char *name, uint64_t number) {
        _cleanup_close_ int fd = -EBADF;
        char old[GEN_NAME_MAX];
        int r;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return 0;
                return -errno;
        }
        r = gen_name(old, ".gen-", number, ".old");
        if (r < 0)
                return r;
        if (!streq(name, old)) {
                /* From now on no run can find it: one waiting for its shared lock sees the name gone. */
                if (renameat(dir_fd, name, dir_fd, old) < 0)
                        return -errno;
        }
        r = remove_tree_at(dir_fd, old);
        if (r < 0)
                return r;
        return 1;
}

int generation_collect(const char *packages_dir) {
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_(closedirp) DIR *d = NULL;
        uint64_t current;
        int r, removed = 0;

        r = open_packages_dir(packages_dir, &dir_fd);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = read_current(dir_fd, &current);
        if (r < 0)
                return r; /* not knowing which one is current, remove nothing */

        r = opendir_dup(dir_fd, &d);
        if (r < 0)
                return r;
        for (;;) {
                struct dirent *de;
                uint64_t n;
                bool finished;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        return removed;
                }
                n = gen_number_of(de->d_name, "gen-", "");
                finished = n > 0;
                if (!finished)
                        n = gen_number_of(de->d_name, ".gen-", ".old"); /* an interrupted removal */
                if (n == 0 || (finished && n == current))
                        continue;
                r = collect_one(dir_fd, de->d_name, n);
                if (r < 0)
                        return r;
                if (finished)
                        removed += r;
        }
}
