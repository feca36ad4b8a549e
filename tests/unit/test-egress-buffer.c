/* Unit tests of src/egress/buffer.c: the relay's byte queues, over a socketpair. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "egress/buffer.h"

static void test_append_consume(void **state) {
        Buffer b = { 0 };

        assert_true(buffer_has_room(&b)); /* unallocated: a read will allocate it */
        assert_int_equal(buffer_len(&b), 0);
        assert_int_equal(buffer_append(&b, "hello ", 6), 0);
        assert_int_equal(buffer_append_printf(&b, "%s %d", "world", 42), 0);
        assert_int_equal(buffer_len(&b), 14);
        assert_memory_equal(buffer_data(&b), "hello world 42", 14);
        buffer_consume(&b, 6);
        assert_memory_equal(buffer_data(&b), "world 42", 8);
        buffer_consume(&b, 8);
        assert_int_equal(buffer_len(&b), 0);
        assert_int_equal(b.start, 0); /* emptied: the room is at the start again */
        buffer_done(&b);
        assert_null(b.data);
}

static void test_append_grows_past_the_default_size(void **state) {
        static uint8_t big[BUFFER_SIZE + 100];
        Buffer b = { 0 };

        memset(big, 'x', sizeof(big));
        assert_int_equal(buffer_append(&b, "ab", 2), 0);
        assert_int_equal(buffer_append(&b, big, sizeof(big)), 0);
        assert_int_equal(buffer_len(&b), sizeof(big) + 2);
        assert_memory_equal(buffer_data(&b), "abxx", 4);
        buffer_done(&b);
}

static void test_read_write(void **state) {
        _cleanup_close_ int a = -EBADF, z = -EBADF;
        Buffer in = { 0 }, out = { 0 };
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        a = sv[0];
        z = sv[1];

        assert_int_equal(buffer_read(&in, z, 16, 16), -EAGAIN); /* nothing sent yet */
        assert_int_equal(buffer_append(&out, "0123456789", 10), 0);
        assert_int_equal(buffer_write(&out, a), 10);
        assert_int_equal(buffer_len(&out), 0);
        assert_int_equal(buffer_write(&out, a), 0); /* nothing to write */

        assert_int_equal(buffer_read(&in, z, 16, 4), 4); /* at most max */
        assert_memory_equal(buffer_data(&in), "0123", 4);
        assert_int_equal(buffer_read(&in, z, 16, 0), -EAGAIN); /* max 0: no read */
        assert_int_equal(buffer_read(&in, z, 16, 100), 6);
        assert_memory_equal(buffer_data(&in), "0123456789", 10);

        /* a full buffer reads nothing until consumed */
        assert_int_equal(buffer_append(&out, "abcdefgh", 8), 0);
        assert_int_equal(buffer_write(&out, a), 8);
        assert_int_equal(buffer_read(&in, z, 16, 100), 6); /* the 16 bytes allocated at first */
        assert_false(buffer_has_room(&in));
        assert_int_equal(buffer_read(&in, z, 16, 100), -EAGAIN);
        buffer_consume(&in, 10);
        assert_int_equal(buffer_read(&in, z, 16, 100), 2);
        assert_memory_equal(buffer_data(&in), "abcdefgh", 8);

        a = safe_close(a);
        buffer_clear(&in);
        assert_int_equal(buffer_read(&in, z, 16, 100), 0); /* EOF */
        assert_int_equal(buffer_append(&out, "x", 1), 0);
        assert_int_equal(buffer_write(&out, z), -EPIPE); /* no SIGPIPE: MSG_NOSIGNAL */
        buffer_done(&in);
        buffer_done(&out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_append_consume),
                cmocka_unit_test(test_append_grows_past_the_default_size),
                cmocka_unit_test(test_read_write),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
