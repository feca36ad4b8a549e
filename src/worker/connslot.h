#pragma once
/* connslot: owns <state_dir>/connections/, the host-wide view of how many client connections are live,
 * shared by every worker process (difysandbox@.service instances, the children of `difysandbox serve`);
 * nobody else touches it. It lets a new connection ask an idle, unauthenticated one to make room
 * (docs/security.md, "Unauthenticated keep-alive").
 *
 *   slots                     byte i is slot i: a connection is live while its worker holds a write
 *                             lock on one byte (an OFD lock, for its life); a worker takes the lowest
 *                             free one. (Files named 0, 1, ... are an older release's, one per slot.)
 *   evict-0 .. evict-7        FIFOs: a worker that is idle and unauthenticated reads the one of its slot;
 *                             a new connection under pressure writes a byte per connection it wants
 *                             gone to those that have a reader; the worker that reads one closes
 *
 * The state is locks and FIFOs, so a worker killed at any instant (SIGKILL included) leaks
 * nothing: the kernel drops its lock with its fd, and a FIFO's unread bytes with its last reader. The
 * directory belongs to the worker user (tmpfiles.d under systemd, serve makes it otherwise).
 *
 * What a worker taken over by its client can do here, under its filter (worker-filter.h): the slots file
 * is held at CONNSLOT_FD, and the filter refuses every write, fcntl, dup and file
 * mapping of an fd from CONNSLOT_FD on, and every lock command of fcntl() on any fd; opens are read-only.
 * So it can neither grow the file nor lock another slot (its own lock was taken before the filter). It
 * can open evict-* FIFOs for reading, as an idle worker does, and take the bytes meant for idle workers:
 * eviction then stops, which is the keep-alive of unauthenticated connections under pressure, no more. */

#include <stdbool.h>
#include <sys/types.h>

/* Where a worker keeps the slots file: above every fd it uses (lowest-numbered first, it holds a dozen),
 * and within the RLIMIT_NOFILE of a service (1024). From here on the worker's filter refuses writes. */
#define CONNSLOT_FD 512

typedef struct ConnSlot ConnSlot;

/* For `difysandbox serve`, as root: makes <state_dir>/connections, mode 0700, owned by uid:gid. */
int connslot_dir_prepare(const char *state_dir, uid_t uid, gid_t gid);

/* Takes a slot for this connection, counting the live ones on the way. Under pressure (at least three
 * quarters of max_connections live, this one included) it asks as many idle unauthenticated connections
 * to close as bring the count back below that mark. Call before the worker's system call filter, which
 * refuses O_CREAT, mkfifo and every fcntl() lock command. The slots file is kept at CONNSLOT_FD or above
 * (-EINVAL when RLIMIT_NOFILE does not reach it; -EPERM when it is not a regular file of the directory's
 * owner, the worker user, or root). Returns 0 with *ret set (holding no slot when all max_connections
 * are taken), or a negative errno when the directory is unusable. */
int connslot_take(const char *state_dir, unsigned max_connections, ConnSlot **ret);
ConnSlot *connslot_release(ConnSlot *slot); /* NULL-safe, returns NULL */

/* The live connections this one saw when it took its slot, itself included; and whether that was
 * pressure. For logs and tests. */
unsigned connslot_live_at_start(const ConnSlot *slot);
bool connslot_pressure_at_start(const ConnSlot *slot);

/* While its connection is idle and unauthenticated: a file descriptor to poll for POLLIN (opened on the
 * first call, kept until connslot_evictable_end()), or a negative errno (-EPERM: the entry is not a FIFO
 * of the directory's owner or root; a file or a directory would poll readable for ever). */
int connslot_evictable_fd(ConnSlot *slot);
/* After that fd polled readable: 1 when this connection was asked to close, 0 otherwise. */
int connslot_evicted(ConnSlot *slot);
/* The connection is busy again (a request came): it no longer offers to close. */
void connslot_evictable_end(ConnSlot *slot);
