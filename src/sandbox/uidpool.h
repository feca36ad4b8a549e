#pragma once
/* uidpool: owns the run UIDs (default 10000–10999) and their lock files under <state_dir>/uids; nobody
 * else hands out UIDs. A UID is held while its flock()ed fd is open, so a SIGKILLed holder leaks
 * nothing: the kernel drops the lock with the last fd. Everything else keyed by a run's UID (its
 * cgroup) belongs to whoever holds the lock. */

#include <sys/types.h>

typedef struct UidLease {
        uid_t uid;
        int fd;
} UidLease;

/* Takes a free UID of [uid_min, uid_max]. -EBUSY when every UID is held. */
int uidpool_take(const char *state_dir, uid_t uid_min, uid_t uid_max, UidLease **ret);
/* Takes exactly uid; -EBUSY when it is held. */
int uidpool_take_uid(const char *state_dir, uid_t uid, UidLease **ret);
UidLease *uidpool_release(UidLease *lease); /* NULL-safe, returns NULL */

/* Counts the UIDs of the range that are free right now (for the manager's stats and tests), or -errno.
 * Takes no lock and creates nothing, so a run taking a UID at the same instant is not disturbed. */
int uidpool_count_free(const char *state_dir, uid_t uid_min, uid_t uid_max);
