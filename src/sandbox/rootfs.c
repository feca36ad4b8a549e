/* rootfs: see rootfs.h. */

#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "child.h"

/* A read-only bind of source onto target. The remount is what makes it read-only: MS_RDONLY is ignored
 * on the first MS_BIND call. */
static int bind_readonly(const char *source, const char *target, unsigned long extra_flags) {
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
                return -errno;
        if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | extra_flags, NULL) < 0)
                return -errno;
        return 0;
}

int rootfs_open_packages(int dir_fd, int *ret_fd) {
        /* Not noexec: C extensions of Python packages (numpy, pandas) and native Node.js addons are
         * mmap()ed executable from it, as those of the tree's dist-packages are. */
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                .propagation = MS_PRIVATE,
        };
        int fd;

        /* Not AT_RECURSIVE: only the directory's own mount, none of what may be mounted below it. */
        fd = open_tree(dir_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (fd < 0)
                return -errno;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
                int r = -errno;
                (void) close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int rootfs_enter(const RunPlan *plan) {
        int r;

        /* Nothing we mount may propagate back to the host, and nothing of the host's may arrive. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;

        /* Not MS_REC: only the tree itself, none of what may be mounted below it on the host. */
        r = bind_readonly(plan->root, plan->root, MS_NODEV);
        if (r < 0)
                return r;

        /* noexec: code cannot map a file it wrote as executable; size and inodes are capped. */
        if (mount("tmpfs", plan->root_tmp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, plan->tmp_options) < 0)
                return -errno;

        /* The run's own processes, and nothing else of the kernel's: a proc of the run's PID namespace
         * (which holds only the run) with subset=pid, so no /proc/sys, /proc/kcore, /proc/meminfo or
         * /proc/loadavg, only /proc/<pid>, /proc/self and /proc/thread-self (as bubblewrap and nsjail
         * give). Node's process.memoryUsage() and libraries reading /proc/self/{stat,status,fd} need
         * it. Its times follow the run's time namespace. */
        if (plan->root_proc && mount("proc", plan->root_proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                     "subset=pid,hidepid=invisible") < 0)
                return -errno;

        /* Device nodes: their own mounts (the root is nodev), read-only (data still flows: a device's
         * I/O is not a write to the filesystem), noexec. */
        for (int i = 0; i < 3; i++) {
                r = bind_readonly(plan->dev_sources[i], plan->dev_targets[i], MS_NOEXEC);
                if (r < 0)
                        return r;
        }

        r = bind_readonly(plan->support_source, plan->support_target, MS_NODEV);
        if (r < 0)
                return r;

        /* The dependency generation the parent holds locked, already read-only (rootfs_open_packages()):
         * the very directory that collection leaves alone while the run lasts, whatever `current` says
         * meanwhile. */
        if (plan->packages_fd >= 0 &&
            move_mount(plan->packages_fd, "", AT_FDCWD, plan->packages_target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;

        /* pivot_root(".", ".") stacks the old root under the new one; detaching "." then removes it, so
         * no path leads back to the host (the same trick as nsjail's initCloneNs). */
        if (chdir(plan->root) < 0)
                return -errno;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return -errno;
        if (umount2(".", MNT_DETACH) < 0)
                return -errno;
        if (chdir("/tmp") < 0)
                return -errno;
        return 0;
}
