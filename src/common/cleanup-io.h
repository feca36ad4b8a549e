#pragma once
/* cleanup-io: the _cleanup_ helpers of stdio streams and directory streams, apart from cleanup.h so
 * that files which use neither do not pull in <stdio.h> and <dirent.h>. */

#include <dirent.h>
#include <stdio.h>

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
