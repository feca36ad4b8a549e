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
 * directory belongs to the worker user (tmpfiles.d under systemd, serve makes it otherwise); every
 * worker is that user, so one taken over by a client could at worst disturb this count, never more. */

#include <stdbool.h>
#include <sys/types.h>

typedef struct ConnSlot ConnSlot;

/* For `difysandbox serve`, as root: makes <state_dir>/connections, mode 0700, owned by uid:gid. */
int connslot_dir_prepare(const char *state_dir, uid_t uid, gid_t gid);

/* Takes a slot for this connection, counting the live ones on the way. Under pressure (at least three
 * quarters of max_connections live, this one included) it asks as many idle unauthenticated connections
 * to close as bring the count back below that mark. Call before the worker's system call filter, which
 * allows neither fcntl() nor O_CREAT. Returns 0 with *ret set (holding no slot when all max_connections
 * are taken), or a negative errno when the directory is unusable. */
int connslot_take(const char *state_dir, unsigned max_connections, ConnSlot **ret);
ConnSlot *connslot_release(ConnSlot *slot); /* NULL-safe, returns NULL */

/* The live connections this one saw when it took its slot, itself included; and whether that was
 * pressure. For logs and tests. */
unsigned connslot_live_at_start(const ConnSlot *slot);
bool connslot_pressure_at_start(const ConnSlot *slot);

/* While its connection is idle and unauthenticated: a file descriptor to poll for POLLIN (opened on the
 * first call, kept until connslot_evictable_end()), or a negative errno. */
int connslot_evictable_fd(ConnSlot *slot);
/* After that fd polled readable: 1 when this connection was asked to close, 0 otherwise. */
int connslot_evicted(ConnSlot *slot);
/* The connection is busy again (a request came): it no longer offers to close. */
void connslot_evictable_end(ConnSlot *slot);
