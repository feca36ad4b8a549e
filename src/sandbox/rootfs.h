#pragma once
/* rootfs: the run's private root (DESIGN §3.5). Called in the child, inside its new mount namespace:
 * the runtime tree bound read-only as /, a size-capped tmpfs on /tmp, /dev/null, /dev/zero and
 * /dev/urandom bound onto the tree's placeholders, the enter library's directory bound onto its own, then
 * pivot_root and the old root detached. Nothing else of the host is visible; nothing survives the
 * namespace. */

typedef struct RunPlan RunPlan;

int rootfs_enter(const RunPlan *plan);
