#pragma once
/* generation: the dependency generations of one language (DESIGN §4), and who may use or remove them.
 *
 * Layout of a packages directory, <runtime_dir>/<language>/packages (owned by the installer's user):
 *   gen-<N>/          a finished generation, never changed after it was switched in (N = 1, 2, ...)
 *   .gen-<N>.tmp/     a generation being built; removed on failure
 *   .gen-<N>.old/     a generation being removed by the collector (renamed first, so no run finds it)
 *   current           symlink "gen-<N>": the generation new runs get
 *   .install.lock     flock()ed (exclusive) by the one installer at work
 *
 * A run holds a shared flock() on its generation's directory for as long as it may read it; collection
 * takes the exclusive lock without waiting and skips a generation it cannot lock, so runs in flight
 * keep the generation they started with. The kernel drops the locks of a process that dies.
 *
 * Nothing here logs: every function returns a negative errno for its caller to report. */

#include <errno.h>
#include <stdint.h>

#define PACKAGES_DIR_NAME "packages"

/* Where a run sees its language's current generation, read-only: python/ (pip --target) for python3,
 * node_modules/ for nodejs. Here because both the sandbox (which mounts it) and the languages'
 * bootstraps (src/runtime/, which read it) need it. The runtime tree has this directory, empty, for the
 * mount (scripts/difysandbox-prepare-runtime creates it: keep its PACKAGES_MOUNT_POINT equal). */
#define RUNTIME_PACKAGES_MOUNT "/usr/lib/difysandbox-packages"

/* A generation in use by a run: the directory, open and share-locked. */
typedef struct Generation {
        uint64_t number; /* 0: none */
        int dir_fd;      /* -EBADF when number is 0 */
        char *path;      /* absolute path of gen-<N>, NULL when number is 0 */
} Generation;

#define GENERATION_NULL ((Generation){ .number = 0, .dir_fd = -EBADF, .path = NULL })

/* Resolves <packages_dir>/current, opens and share-locks the generation and checks that it is still
 * the one the name leads to (a collector may have removed it meanwhile: then resolves again).
 * Returns 0 with *ret filled, 0 with ret->number == 0 when there is no current generation (no
 * packages directory, or no symlink yet), or a negative errno (-EBADMSG: current is not "gen-<N>"). */
int generation_acquire(const char *packages_dir, Generation *ret);
/* Closes the directory (dropping the lock) and frees the path; g is GENERATION_NULL afterwards. */
void generation_release(Generation *g);

/* The number of the current generation, 0 when there is none. */
int generation_current(const char *packages_dir, uint64_t *ret);

/* Installer side. generation_begin() creates packages_dir if it is missing, takes .install.lock
 * (waiting for another installer), removes what a dead installer or collector left (.gen-<N>.tmp,
 * .gen-<N>.old), picks the next number (one more than any gen-<N>, .gen-<N>.tmp, .gen-<N>.old present
 * or named by current) and creates .gen-<N>.tmp (mode 0755). The returned lock fd must stay open until
 * generation_commit() or generation_abort(), and generation_collect() after it. */
int generation_begin(const char *packages_dir, uint64_t *ret_number, int *ret_lock_fd);
/* Removes the file or tree name (one path component) from .gen-<N>.tmp; 0 when it does not exist. For
 * what the installer keeps only while it builds (its HOME, npm's cache). */
int generation_remove_entry(const char *packages_dir, uint64_t number, const char *name);
/* Makes .gen-<N>.tmp readable by everyone and writable by its owner only (directories 0755, files 0644,
 * or 0755 when the owner may execute them; fifos, sockets and devices are removed), syncs it, renames
 * it to gen-<N>, then switches current to it atomically (a new symlink renamed over the old one), and
 * syncs the directory. */
int generation_commit(const char *packages_dir, uint64_t number);
/* Removes .gen-<N>.tmp and everything in it. */
int generation_abort(const char *packages_dir, uint64_t number);
/* Removes every gen-<N> other than the current one that no run holds; returns how many it removed,
 * or a negative errno. Never removes the current generation. Call it with .install.lock held (the
 * installer does, after generation_commit()). */
int generation_collect(const char *packages_dir);
