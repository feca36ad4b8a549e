#pragma once
/* buffer: the byte queues of the egress relay's connections (relay.c): one per direction and purpose, each
 * read into and written from non-blocking sockets. A Buffer is allocated on first use and grows only when
 * one append is larger than what is left; reads never grow it. Only src/egress uses it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BUFFER_SIZE (64U * 1024U) /* each direction of one connection */

typedef struct Buffer {
        uint8_t *data;
        size_t size, start, end; /* the bytes held are data[start..end) */
} Buffer;

/* Frees the memory; the buffer is then empty and unallocated. */
void buffer_done(Buffer *b);

/* The bytes held, and where they start (a valid pointer even when the buffer is unallocated). */
size_t buffer_len(const Buffer *b);
const uint8_t *buffer_data(const Buffer *b);

/* Appends n bytes (growing the buffer if needed), or a formatted text. 0 or -ENOMEM. */
int buffer_append(Buffer *b, const void *p, size_t n);
int buffer_append_printf(Buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Whether a read into b could take a byte: an unallocated buffer will be. */
bool buffer_has_room(const Buffer *b);

/* Drops the first n bytes held, or all of them. */
void buffer_consume(Buffer *b, size_t n);
void buffer_clear(Buffer *b);

/* Reads at most max bytes from fd into b (allocated with size bytes on first use). Returns the bytes read,
 * 0 at EOF, -EAGAIN (also when b is full, max is 0 or the read was interrupted), or -errno. */
ssize_t buffer_read(Buffer *b, int fd, size_t size, size_t max);

/* Writes what b holds to fd (MSG_NOSIGNAL). Returns the bytes written (0 when b is empty), -EAGAIN, or
 * -errno. */
ssize_t buffer_write(Buffer *b, int fd);
