/* creds: see creds.h. */

#include "creds.h"

#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int creds_drop(uid_t uid, gid_t gid, cap_t no_caps) {
        if (uid == 0 || gid == 0)
                return -EPERM;

        /* The bounding set first: dropping from it needs CAP_SETPCAP, which setuid() takes away. */
        for (cap_value_t cap = 0; cap < cap_max_bits(); cap++)
                if (cap_drop_bound(cap) < 0)
                        return -errno;
        if (cap_reset_ambient() < 0)
                return -errno;

        if (syscall(SYS_setgroups, 0, NULL) < 0)
                return -errno;
        if (syscall(SYS_setresgid, gid, gid, gid) < 0)
                return -errno;
        if (syscall(SYS_setresuid, uid, uid, uid) < 0)
                return -errno;

        /* setuid() from root to non-root already cleared permitted and effective; make it explicit. */
        if (cap_set_proc(no_caps) < 0)
                return -errno;

        /* Fail closed: if root could be regained, something above did not take. */
        if (syscall(SYS_setresuid, 0, 0, 0) == 0 || syscall(SYS_setresgid, 0, 0, 0) == 0)
                return -EPERM;
        if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid)
                return -EPERM;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}
