#pragma once
/* cleanup: the _cleanup_ helpers, written once (STYLE.md). Every owned pointer or fd in the project is a
 * _cleanup_ variable; ownership leaves a scope only through TAKE_PTR() or TAKE_FD(). */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) {
        free(*(void **) p);
}

/* Closes fd if it is valid, keeps errno, and always returns -EBADF so that fd = safe_close(fd) works. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd); /* Linux releases the fd even when close() reports an error */
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        (void) safe_close(*fd);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_PTR(p)                      \
        ({                               \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;              \
                _p_;                     \
        })
#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -EBADF;   \
                _fd_;            \
        })

#define DEFINE_POINTER_CLEANUP(type, func)    \
        static inline void func##p(type *p) { \
                if (*p)                       \
                        (void) func(*p);      \
        }

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define streq(a, b) (strcmp((a), (b)) == 0)
