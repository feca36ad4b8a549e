/* fileio: see fileio.h. */

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        for (;;) {
                ssize_t n;

                if (len + 1 >= alloc) {
                        size_t na = alloc ? alloc * 2 : 16384;
                        char *b;

                        if (alloc > max + 1)
                                return -EFBIG;
                        b = realloc(buf, na);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        alloc = na;
                }
                n = read(fd, buf + len, alloc - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max)
                        return -EFBIG;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}
