#pragma once
/* instance: who this sandbox instance is among others on the same host, and its claim on its UID range.
 *
 * The identity is 16 hex digits of a hash (FNV-1a, 64 bits) of the canonical state_dir. The state_dir is
 * what makes an instance one: its UID locks live there, so two processes with the same state_dir share
 * one pool and see each other's runs, and two with different ones cannot. It is stable across restarts
 * (a restarted instance recognizes the cgroups its killed predecessor left), needs no new config key, and
 * is short enough for cgroup names. Run cgroups are named with it (cgroup.h), so that an instance sweeps
 * only its own.
 *
 * The claim: a host-wide registry, one file per live process under INSTANCE_REGISTRY_DIR (under /run,
 * so a reboot empties it), each holding "<identity> <uid_min> <uid_max> <state_dir>" and flock()ed by
 * its owner for as long as it lives (and its children, which inherit the fd). A registration is checked
 * and made under the directory's lock file, so two instances starting at once cannot both miss each
 * other. A file nobody holds locked is a dead instance's and is removed. Another identity's live range
 * that overlaps ours is refused: two instances handing the same UID to two runs would let one run's
 * processes signal the other's and share its RLIMIT_NPROC. */

#include <stdint.h>
#include <sys/types.h>

#define INSTANCE_REGISTRY_DIR "/run/difysandbox/instances"
#define INSTANCE_ID_LEN 16

typedef struct Instance Instance;

/* The identity of state_dir (its realpath() when it exists, else the path as given). */
int instance_id(const char *state_dir, char ret[static INSTANCE_ID_LEN + 1]);

/* Registers this process's claim on [uid_min, uid_max] for state_dir in registry_dir (NULL for
 * INSTANCE_REGISTRY_DIR). -EADDRINUSE when a live instance of another state_dir holds an overlapping
 * range: then *ret_reason says which (malloc()ed). A process that registers again (a reload) replaces
 * nothing: its older registration is not counted against it. */
int instance_register(const char *registry_dir, const char *state_dir, uid_t uid_min, uid_t uid_max,
                      Instance **ret, char **ret_reason);
const char *instance_get_id(const Instance *instance);
/* Drops the claim (closes the locked fd, removes the file). NULL-safe. */
Instance *instance_free(Instance *instance);
