#pragma once
/* creds: drops a process to an unprivileged identity: the run's (DESIGN §3.6, in the child) and the egress
 * relay's (nobody). A plain helper of libcap and raw syscalls, below both of its users. Empties the
 * capability bounding set and the ambient set (libcap), then setgroups(0) → setgid → setuid to uid,
 * clears every capability, checks that root cannot be regained, and sets no_new_privs. Raw syscalls for the
 * id changes: glibc's wrappers would try to signal threads that exist only in the parent. */

#include <sys/capability.h>
#include <sys/types.h>

int creds_drop(uid_t uid, gid_t gid, cap_t no_caps);
