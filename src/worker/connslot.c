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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#define CONNECTIONS_DIR "connections"
#define EVICT_FIFOS 8U

struct ConnSlot {
        int dir_fd;
        int fd;        /* our slot file, LOCK_EX; -EBADF when all were taken */
        unsigned slot; /* its number, or the PID's when there is none: it picks our FIFO */
        unsigned live;
        bool pressure;
        int evict_fd; /* our FIFO's read end while we offer to close */
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

static int slot_open(int dir_fd, unsigned i, bool create) {
        char name[16];
        int fd;

        (void) snprintf(name, sizeof(name), "%u", i);
        fd = openat(dir_fd, name, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW, 0600);
        return fd < 0 ? -errno : fd;
}

/* 1 when slot i is held by a live worker, 0 when it is free, -ENOENT when it was never made (nor any
 * slot above it). */
static int slot_held(int dir_fd, unsigned i) {
        _cleanup_close_ int fd = slot_open(dir_fd, i, /* create= */ false);

        if (fd < 0)
                return fd;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? 1 : -errno;
        return 0; /* closing fd frees it again */
}

/* Takes the lowest free slot below max and counts the held ones. */
static int slots_scan(ConnSlot *s, unsigned max) {
        unsigned i = 0;
        int r;

        for (; i < max && s->fd < 0; i++) {
                _cleanup_close_ int fd = slot_open(s->dir_fd, i, /* create= */ true);

                if (fd < 0)
                        return fd;
                s->live++; /* ours, or a live one's */
                if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
                        s->slot = i;
                        s->fd = TAKE_FD(fd);
                } else if (errno != EWOULDBLOCK)
                        return -errno;
        }
        if (s->fd < 0) {
                s->live++; /* this connection, beyond every slot */
                s->slot = (unsigned) getpid();
        }
        for (; i < max; i++) {
                r = slot_held(s->dir_fd, i);
                if (r == -ENOENT)
                        break;
                if (r < 0)
                        return r;
                s->live += (unsigned) r;
        }
        return 0;
}

static void fifo_name(unsigned slot, char *buf, size_t size) {
        (void) snprintf(buf, size, "evict-%u", slot % EVICT_FIFOS);
}

/* n bytes, one at a time, each to the next FIFO that has a reader: the first reader to take a byte
 * closes its connection. A FIFO without a reader refuses to open; none anywhere: no connection is idle
 * and unauthenticated, and nothing is asked. A byte no reader takes is dropped with the last reader. */
static void evict(const ConnSlot *s, unsigned n) {
        int fds[EVICT_FIFOS];
        unsigned open_fds = 0;

        for (unsigned k = 0; k < EVICT_FIFOS; k++) {
                char name[16];
                struct stat st;
                int fd;

                fifo_name(s->slot + k, name, sizeof(name));
                fd = openat(s->dir_fd, name, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue; /* ENXIO: no reader; ENOENT: not made yet */
                if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
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
        char name[16];

        if (s->evict_fd >= 0)
                return s->evict_fd;
        fifo_name(s->slot, name, sizeof(name));
        s->evict_fd = openat(s->dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        return s->evict_fd < 0 ? (s->evict_fd = -errno) : s->evict_fd;
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
