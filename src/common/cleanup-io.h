#pragma once
/* cleanup-io: stdio and directory streams: their _cleanup_ helpers, and a directory stream on a
 * directory fd the caller keeps. Apart from cleanup.h so that files which use neither do not pull in
 * <stdio.h> and <dirent.h>. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* A directory stream reading dir_fd's directory from its start, on a duplicate, so the caller's fd stays
 * its own (closedir() closes only the duplicate). Returns 0 or a negative errno. */
static inline int opendir_dup(int dir_fd, DIR **ret) {
        int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                (void) close(fd);
                return r;
        }
        rewinddir(d); /* the duplicate shares the offset of dir_fd */
        *ret = d;
        return 0;
}
