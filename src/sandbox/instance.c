/* instance: see instance.h. */

#include "instance.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"

struct Instance {
        char id[INSTANCE_ID_LEN + 1];
        char *path;  /* our registry file */
        int fd;      /* flock()ed while we live */
        pid_t owner; /* who registered: a forked child that frees its copy leaves the entry alone */
};

/* A registry entry is one short line; anything longer is not ours. */
#define ENTRY_MAX 8192

DEFINE_POINTER_CLEANUP(Instance *, instance_free);

int instance_id(const char *state_dir, char ret[static INSTANCE_ID_LEN + 1]) {
        _cleanup_free_ char *canonical = realpath(state_dir, NULL);
        const char *s = canonical ? canonical : state_dir;
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        if (!s || !*s)
                return -EINVAL;
        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= UINT64_C(0x100000001b3);
        }
        (void) snprintf(ret, INSTANCE_ID_LEN + 1, "%016" PRIx64, h);
        return 0;
}

static int mkdir_parents(const char *dir) {
        _cleanup_free_ char *copy = strdup(dir);

        if (!copy)
                return -ENOMEM;
        for (char *p = strchr(copy + 1, '/');; p = strchr(p + 1, '/')) {
                if (p)
                        *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST)
                        return -errno;
                if (!p)
                        return 0;
                *p = '/';
        }
}

/* Reads an entry; 1 when it is a live instance's (its owner holds the lock), 0 when it was a dead one's
 * (then it is removed), -errno otherwise. */
static int read_entry(int dir_fd, const char *name, char id[static INSTANCE_ID_LEN + 1], uint32_t *ret_min,
                      uint32_t *ret_max, char **ret_state_dir) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL, *state_dir = NULL;
        ssize_t n;

        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (flock(fd, LOCK_SH | LOCK_NB) >= 0) {
                (void) unlinkat(dir_fd, name, 0); /* nobody holds it: its owner died */
                return 0;
        }
        if (errno != EWOULDBLOCK)
                return -errno;
        text = calloc(1, ENTRY_MAX + 1);
        state_dir = calloc(1, ENTRY_MAX + 1);
        if (!text || !state_dir)
                return -ENOMEM;
        n = read(fd, text, ENTRY_MAX);
        if (n < 0)
                return -errno;
        if (sscanf(text, "%16s %" SCNu32 " %" SCNu32 " %8192[^\n]", id, ret_min, ret_max, state_dir) != 4)
                return -EBADMSG;
        *ret_state_dir = TAKE_PTR(state_dir);
        return 1;
}

/* -EADDRINUSE, with the reason, when a live entry of another identity overlaps [uid_min, uid_max]. */
static int check_others(int dir_fd, const char *own_id, uid_t uid_min, uid_t uid_max, char **ret_reason) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        char own_prefix[32];

        (void) snprintf(own_prefix, sizeof(own_prefix), "-%d-", (int) getpid());
        d = fdopendir(dup(dir_fd));
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *other_dir = NULL;
                char id[INSTANCE_ID_LEN + 1] = { 0 };
                uint32_t lo, hi;
                int r;

                if (de->d_name[0] == '.' || strstr(de->d_name, own_prefix))
                        continue; /* the lock file; or ours, from before a reload */
                r = read_entry(dir_fd, de->d_name, id, &lo, &hi, &other_dir);
                if (r == -EBADMSG)
                        continue; /* not an entry (still being written cannot be: we hold the lock) */
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                if (streq(id, own_id) || hi < uid_min || lo > uid_max)
                        continue;
                if (asprintf(ret_reason,
                             "UID range %u-%u overlaps %" PRIu32 "-%" PRIu32
                             " of the instance running with state_dir %s (registered in %s)",
                             (unsigned) uid_min, (unsigned) uid_max, lo, hi, other_dir,
                             INSTANCE_REGISTRY_DIR) < 0)
                        *ret_reason = NULL;
                return -EADDRINUSE;
        }
        return 0;
}

/* Creates our entry, locked before anyone can see it complete (we hold the directory's lock). */
static int write_entry(int dir_fd, Instance *in, const char *state_dir, uid_t uid_min, uid_t uid_max,
                       const char *registry_dir) {
        _cleanup_free_ char *line = NULL;
        const char *name;
        uint32_t nonce = 0;
        int len;

        (void) getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK); /* a second registration of this PID */
        if (asprintf(&in->path, "%s/%s-%d-%08" PRIx32, registry_dir, in->id, (int) getpid(), nonce) < 0) {
                in->path = NULL;
                return -ENOMEM;
        }
        name = strrchr(in->path, '/') + 1;
        in->fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (in->fd < 0)
                return -errno;
        in->owner = getpid();
        if (flock(in->fd, LOCK_EX | LOCK_NB) < 0)
                return -errno;
        len = asprintf(&line, "%s %u %u %s\n", in->id, (unsigned) uid_min, (unsigned) uid_max, state_dir);
        if (len < 0)
                return -ENOMEM;
        if (write(in->fd, line, (size_t) len) != len)
                return errno > 0 ? -errno : -EIO;
        return 0;
}

int instance_register(const char *registry_dir, const char *state_dir, uid_t uid_min, uid_t uid_max,
                      Instance **ret, char **ret_reason) {
        _cleanup_(instance_freep) Instance *in = NULL;
        _cleanup_close_ int dir_fd = -EBADF, lock_fd = -EBADF;
        int r;

        if (!registry_dir)
                registry_dir = INSTANCE_REGISTRY_DIR;
        in = calloc(1, sizeof(*in));
        if (!in)
                return -ENOMEM;
        in->fd = -EBADF;
        r = instance_id(state_dir, in->id);
        if (r < 0)
                return r;
        r = mkdir_parents(registry_dir);
        if (r < 0)
                return r;
        dir_fd = open(registry_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dir_fd < 0)
                return -errno;
        lock_fd = openat(dir_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd < 0)
                return -errno;
        if (flock(lock_fd, LOCK_EX) < 0) /* held for a directory scan: short */
                return -errno;

        r = check_others(dir_fd, in->id, uid_min, uid_max, ret_reason);
        if (r < 0)
                return r;
        r = write_entry(dir_fd, in, state_dir, uid_min, uid_max, registry_dir);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(in);
        return 0; /* lock_fd closes: the next instance sees our complete entry */
}

const char *instance_get_id(const Instance *instance) {
        return instance->id;
}

Instance *instance_free(Instance *in) {
        if (!in)
                return NULL;
        if (in->path && in->fd >= 0 && in->owner == getpid())
                (void) unlink(in->path); /* children that inherited the fd keep the lock, not the name */
        (void) safe_close(in->fd);
        free(in->path);
        free(in);
        return NULL;
}
