#pragma once
/* rootfs: the run's private root (DESIGN §3.5). rootfs_enter() is called in the child, inside its new
 * mount namespace: the runtime tree bound read-only as /, a size-capped tmpfs on /tmp, /dev/null,
 * /dev/zero and /dev/urandom bound onto the tree's placeholders, the enter library's directory bound onto
 * its own, the language's dependency generation (if there is one) attached read-only at
 * RUNTIME_PACKAGES_MOUNT, then pivot_root and the old root detached. Nothing else of the host is visible;
 * nothing survives the namespace. */

typedef struct RunPlan RunPlan;

/* In the parent, before the child exists: a detached copy of the mount of dir_fd's directory (the
 * generation the parent holds locked), read-only, nosuid, nodev and private, as an fd for the child to
 * attach. By fd, never by name: the child's new mount namespace could not bind an fd of ours, and a name
 * under the installer's directory is not the root child's to follow. */
int rootfs_open_packages(int dir_fd, int *ret_fd);

int rootfs_enter(const RunPlan *plan);
