/* buffer: see buffer.h. */

#include "buffer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"

void buffer_done(Buffer *b) {
        free(b->data);
        *b = (Buffer){ 0 };
}

size_t buffer_len(const Buffer *b) {
        return b->end - b->start;
}

const uint8_t *buffer_data(const Buffer *b) {
        static const uint8_t none[1];

        return b->data ? b->data + b->start : none; /* never NULL + 0, which UBSan reports */
}

/* Room at the end, allocating the buffer (size bytes) on first use. */
static int buffer_space(Buffer *b, size_t size, size_t *ret) {
        if (!b->data) {
                b->data = malloc(size);
                if (!b->data)
                        return -ENOMEM;
                b->size = size;
        }
        if (b->start > 0) {
                memmove(b->data, b->data + b->start, buffer_len(b));
                b->end -= b->start;
                b->start = 0;
        }
        *ret = b->size - b->end;
        return 0;
}

int buffer_append(Buffer *b, const void *p, size_t n) {
        size_t space;
        int r;

        r = buffer_space(b, n > BUFFER_SIZE ? n : BUFFER_SIZE, &space);
        if (r < 0)
                return r;
        if (space < n) {
                uint8_t *d = realloc(b->data, b->end + n);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->size = b->end + n;
        }
        memcpy(b->data + b->end, p, n);
        b->end += n;
        return 0;
}

int buffer_append_printf(Buffer *b, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int n;

        va_start(ap, format);
        n = vasprintf(&s, format, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return buffer_append(b, s, (size_t) n);
}

bool buffer_has_room(const Buffer *b) {
        return !b->data || b->size > buffer_len(b);
}

void buffer_consume(Buffer *b, size_t n) {
        b->start += n;
        if (b->start == b->end)
                b->start = b->end = 0;
}

void buffer_clear(Buffer *b) {
        b->start = b->end = 0;
}

ssize_t buffer_read(Buffer *b, int fd, size_t size, size_t max) {
        size_t space;
        ssize_t n;
        int r;

        r = buffer_space(b, size, &space);
        if (r < 0)
                return r;
        if (space > max)
                space = max;
        if (space == 0)
                return -EAGAIN;
        n = recv(fd, b->data + b->end, space, 0);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->end += (size_t) n;
        return n;
}

ssize_t buffer_write(Buffer *b, int fd) {
        ssize_t n;

        if (buffer_len(b) == 0)
                return 0;
        n = send(fd, b->data + b->start, buffer_len(b), MSG_NOSIGNAL);
        if (n < 0)
                return errno == EINTR || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        buffer_consume(b, (size_t) n);
        return n;
}
