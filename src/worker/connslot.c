/* connslot: see connslot.h.
 *
 * Why FIFOs: an idle worker already sits in ppoll() on its connection, so the request to close must be
 * something ppoll() sees, cheaply and without a signal (the worker's filter lets it signal only itself,
 * and a PID read from a file may belong to someone else by then). One byte wakes the readers of one FIFO
 * and exactly one of them gets it: a byte makes room for one connection. Eight FIFOs
 * (by slot) keep the number of workers one byte wakes to an eighth of the idle ones. */

#include "connslot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#define CONNECTIONS_DIR "connections"
#define SLOTS_FILE "slots"
#define EVICT_FIFOS 8U

struct ConnSlot {
        int dir_fd;
        int fd;        /* SLOTS_FILE, holding our slot's lock; -EBADF when all were taken */
        unsigned slot; /* its number, or the PID's when there is none: it picks our FIFO */
        unsigned live;
        bool pressure;
        int evict_fd; /* our FIFO's read end while we offer to close */
        uid_t owner;  /* the directory's: every entry in it is this user's */
};

DEFINE_POINTER_CLEANUP(ConnSlot *, connslot_release);

int connslot_dir_prepare(const char *state_dir, uid_t uid, gid_t gid) {
        _cleanup_close_ int state_fd = -EBADF, fd = -EBADF;
        struct stat st;

        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST) /* as admit.c: serve's runner may come later */
                return -errno;
        state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        if (mkdirat(state_fd, CONNECTIONS_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(state_fd, CONNECTIONS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0)
                return -errno;
        if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
                return -errno;
        return 0;
}

/* A lock on byte i of SLOTS_FILE, the slot's whole state. An open file description's own (OFD) lock,
 * not a process's: it goes with the worker's last fd, whatever else the process opens or closes. */
static struct flock slot_range(unsigned from, unsigned to) {
        return (struct flock){
                .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = from, .l_len = to - from
        };
}

/* Counts the slots in [from, to) that another worker holds: one F_OFD_GETLK per held slot and one per
 * gap, where opening a file per slot took three system calls for every slot ever made (issue 25: a burst
 * of connections used to tax every later one). The kernel names any one conflicting lock in the range,
 * not the lowest, so both sides of it are looked at. */
static int slots_held(int fd, unsigned from, unsigned to, unsigned *count) {
        while (from < to) {
                struct flock fl = slot_range(from, to);
                unsigned lo, hi;
                int r;

                if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
                        return -errno;
                if (fl.l_type == F_UNLCK)
                        return 0;
                lo = fl.l_start > (off_t) from ? (unsigned) fl.l_start : from;
                hi = fl.l_len == 0 || fl.l_start + fl.l_len > (off_t) to
                             ? to
                             : (unsigned) (fl.l_start + fl.l_len);
                if (lo >= hi) /* not inside what was asked: cannot happen, but must not loop */
                        return -EIO;
                *count += hi - lo;
                r = slots_held(fd, from, lo, count);
                if (r < 0)
                        return r;
                from = hi;
        }
        return 0;
}

/* An entry's owner: the directory's (the worker user), or root, who may make anything anywhere (a worker
 * run as root, in tests, creates the file as root). */
static bool owner_trusted(uid_t uid, uid_t owner) {
        return uid == owner || uid == 0;
}

/* Ours to use: a regular file of the directory's owner or root (not a FIFO, a device or another user's
 * file someone put there), at CONNSLOT_FD or above, where the worker's filter refuses every write,
 * resize, lock and duplicate of it. */
static int slots_open(int dir_fd, uid_t owner, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF, pinned = -EBADF;
        struct stat st;

        fd = openat(dir_fd, SLOTS_FILE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || !owner_trusted(st.st_uid, owner))
                return -EPERM;
        pinned = fcntl(fd, F_DUPFD_CLOEXEC, CONNSLOT_FD); /* EINVAL: RLIMIT_NOFILE is below it */
        if (pinned < 0)
                return -errno;
        *ret_fd = TAKE_FD(pinned);
        return 0;
}

/* Takes the lowest free slot below max and counts the held ones. */
static int slots_scan(ConnSlot *s, unsigned max) {
        _cleanup_close_ int fd = -EBADF;
        unsigned i = 0;
        int r;

        r = slots_open(s->dir_fd, s->owner, &fd);
        if (r < 0)
                return r;
        for (; i < max; i++) {
                struct flock fl = slot_range(i, i + 1);

                if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
                        s->slot = i;
                        s->fd = TAKE_FD(fd);
                        break;
                }
                if (errno != EAGAIN && errno != EACCES)
                        return -errno;
                s->live++; /* a live one's */
        }
        s->live++; /* this connection's, whether it got a slot or not */
        if (s->fd < 0) {
                s->slot = (unsigned) getpid();
                return 0;
        }
        return slots_held(s->fd, i + 1, max, &s->live);
}

static void fifo_name(unsigned slot, char *buf, size_t size) {
        (void) snprintf(buf, size, "evict-%u", slot % EVICT_FIFOS);
}

/* An evict-* entry is used only if it is what connslot_take() made: a FIFO of the directory's owner, the
 * worker user (or root). A regular file or a directory there would poll readable for ever (an idle worker
 * would spin), and another user's FIFO is not ours to trust. Returns 0, or -EPERM. */
static int fifo_check(int fd, uid_t owner) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISFIFO(st.st_mode) || !owner_trusted(st.st_uid, owner))
                return -EPERM;
        return 0;
}

/* n bytes, one at a time, each to the next FIFO that has a reader: the first reader to take a byte
 * closes its connection. A FIFO without a reader refuses to open; none anywhere: no connection is idle
 * and unauthenticated, and nothing is asked. A byte no reader takes is dropped with the last reader. */
static void evict(const ConnSlot *s, unsigned n) {
        int fds[EVICT_FIFOS];
        unsigned open_fds = 0;

        for (unsigned k = 0; k < EVICT_FIFOS; k++) {
                char name[16];
                int fd;

                fifo_name(s->slot + k, name, sizeof(name));
                fd = openat(s->dir_fd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue; /* ENXIO: no reader; ENOENT: not made yet */
                if (fifo_check(fd, s->owner) < 0) {
                        (void) close(fd);
                        continue;
                }
                fds[open_fds++] = fd;
        }
        for (unsigned i = 0; i < n && open_fds > 0; i++)
                (void) !write(fds[i % open_fds], "x", 1); /* full (EAGAIN): plenty asked there already */
        for (unsigned k = 0; k < open_fds; k++)
                (void) close(fds[k]);
}

static int fifos_make(int dir_fd) {
        for (unsigned k = 0; k < EVICT_FIFOS; k++) {
                char name[16];

                fifo_name(k, name, sizeof(name));
                if (mkfifoat(dir_fd, name, 0600) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

int connslot_take(const char *state_dir, unsigned max_connections, ConnSlot **ret) {
        _cleanup_(connslot_releasep) ConnSlot *s = NULL;
        _cleanup_close_ int state_fd = -EBADF;
        unsigned mark = max_connections - max_connections / 4;
        struct stat st;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (ConnSlot){ .dir_fd = -EBADF, .fd = -EBADF, .evict_fd = -EBADF };
        state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0)
                return -errno;
        s->dir_fd = openat(state_fd, CONNECTIONS_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->dir_fd < 0)
                return -errno;
        if (fstat(s->dir_fd, &st) < 0)
                return -errno;
        s->owner = st.st_uid;
        r = fifos_make(s->dir_fd);
        if (r < 0)
                return r;
        if (mark == 0)
                mark = 1;
        r = slots_scan(s, max_connections);
        if (r < 0)
                return r;
        /* Back below the mark, so that the connections on their way in find room: under systemd the one
         * past MaxConnections= is refused, under serve it waits in the backlog behind the others. */
        s->pressure = s->live >= mark;
        if (s->pressure)
                evict(s, s->live - mark + 1);
        *ret = TAKE_PTR(s);
        return 0;
}

ConnSlot *connslot_release(ConnSlot *s) {
        if (!s)
                return NULL;
        (void) safe_close(s->evict_fd);
        (void) safe_close(s->fd);
        (void) safe_close(s->dir_fd);
        free(s);
        return NULL;
}

unsigned connslot_live_at_start(const ConnSlot *s) {
        return s->live;
}

bool connslot_pressure_at_start(const ConnSlot *s) {
        return s->pressure;
}

int connslot_evictable_fd(ConnSlot *s) {
        _cleanup_close_ int fd = -EBADF;
        char name[16];
        int r;

        if (s->evict_fd >= 0)
                return s->evict_fd;
        if (s->evict_fd == -EPERM)
                return s->evict_fd; /* not a FIFO of ours: not looked at again for this connection */
        fifo_name(s->slot, name, sizeof(name));
        fd = openat(s->dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return (s->evict_fd = -errno);
        r = fifo_check(fd, s->owner);
        if (r < 0)
                return (s->evict_fd = r);
        return (s->evict_fd = TAKE_FD(fd));
}

int connslot_evicted(ConnSlot *s) {
        char c;
        ssize_t n;

        if (s->evict_fd < 0)
                return 0;
        n = read(s->evict_fd, &c, 1);
        if (n == 1)
                return 1;
        if (n == 0)
                /* End of file: the last writer closed after another reader took its byte. A FIFO then
                 * polls as hung up until it is opened anew, so it is, at the next call. */
                connslot_evictable_end(s);
        return 0;
}

void connslot_evictable_end(ConnSlot *s) {
        s->evict_fd = safe_close(s->evict_fd);
}
