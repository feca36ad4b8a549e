/* Unit tests for src/worker/connslot.c: a connection takes the lowest free slot and counts exactly the
 * live ones, whatever the pattern of held slots, and a slot comes free with its holder's fd. Other
 * workers are stood in for by open file descriptions of this process holding OFD locks of their own,
 * which conflict with each other as another process's would. Each test has its own mkdtemp() state dir. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "worker/connslot.h"

typedef struct {
        char dir[64];
        char slots[96];
} State;

static int state_setup(void **state) {
        State *s = calloc(1, sizeof(*s));
        char connections[80];

        assert_non_null(s);
        (void) snprintf(s->dir, sizeof(s->dir), "/tmp/test-connslot-XXXXXX");
        assert_non_null(mkdtemp(s->dir));
        (void) snprintf(connections, sizeof(connections), "%s/connections", s->dir);
        assert_int_equal(mkdir(connections, 0700), 0);
        (void) snprintf(s->slots, sizeof(s->slots), "%s/slots", connections);
        *state = s;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int state_teardown(void **state) {
        State *s = *state;

        (void) nftw(s->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(s);
        return 0;
}

/* Another worker's connection: an open file description of its own holding bytes [start, start+len) of the
 * slots file (len 0: to its end, as a lock may say). Returns its fd. */
static int hold(const State *s, off_t start, off_t len) {
        int fd = open(s->slots, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len };

        assert_true(fd >= 0);
        assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
        return fd;
}

static void test_the_first_connection_takes_slot_zero(void **state) {
        State *s = *state;
        ConnSlot *slot = NULL;

        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(connslot_live_at_start(slot), 1);
        assert_false(connslot_pressure_at_start(slot));
        slot = connslot_release(slot);
}

static void test_it_takes_the_lowest_free_slot_and_counts_every_held_one(void **state) {
        State *s = *state;
        /* Held: 0, 1, 3, 7, 8 (one lock of two bytes) and 11, taken from the top down: the kernel reports
         * one conflicting lock of a range, the oldest, here the highest, and the count must not depend on
         * which. */
        int fds[] = { hold(s, 11, 1), hold(s, 7, 2), hold(s, 3, 1), hold(s, 1, 1), hold(s, 0, 1) };
        ConnSlot *slot = NULL, *next = NULL;

        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(connslot_live_at_start(slot), 6 + 1); /* six held, and this one in slot 2 */
        /* The next one finds slot 2 taken by the first, and takes 4. */
        assert_int_equal(connslot_take(s->dir, 16, &next), 0);
        assert_int_equal(connslot_live_at_start(next), 8);
        next = connslot_release(next);
        slot = connslot_release(slot);
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                assert_int_equal(close(fds[i]), 0);
}

static void test_a_released_slot_is_free_again(void **state) {
        State *s = *state;
        int held = hold(s, 0, 1);
        ConnSlot *first = NULL, *second = NULL;

        assert_int_equal(connslot_take(s->dir, 16, &first), 0); /* slot 1 */
        assert_int_equal(close(held), 0);                       /* slot 0's worker is gone */
        assert_int_equal(connslot_take(s->dir, 16, &second), 0);
        assert_int_equal(connslot_live_at_start(second), 2); /* slot 0 again, and the first in slot 1 */
        second = connslot_release(second);
        first = connslot_release(first);
}

static void test_held_slots_up_to_the_end_count_each_and_make_pressure(void **state) {
        State *s = *state;
        int low = hold(s, 0, 2), rest = hold(s, 10, 0); /* 0, 1 and 10 up to any end: 2 + 6 of 16 */
        ConnSlot *slot = NULL;

        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(connslot_live_at_start(slot), 2 + 6 + 1);
        assert_false(connslot_pressure_at_start(slot)); /* the mark is 12 of 16 */
        slot = connslot_release(slot);
        assert_int_equal(close(rest), 0);

        rest = hold(s, 3, 0); /* 0, 1 and 3..15 held: 15 of 16, this one takes 2 */
        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(connslot_live_at_start(slot), 16);
        assert_true(connslot_pressure_at_start(slot));
        slot = connslot_release(slot);
        assert_int_equal(close(rest), 0);
        assert_int_equal(close(low), 0);
}

static void test_when_every_slot_is_held_it_counts_itself_beyond_them(void **state) {
        State *s = *state;
        int all = hold(s, 0, 0);
        ConnSlot *slot = NULL;

        assert_int_equal(connslot_take(s->dir, 8, &slot), 0);
        assert_int_equal(connslot_live_at_start(slot), 9);
        assert_true(connslot_pressure_at_start(slot));
        slot = connslot_release(slot);
        assert_int_equal(close(all), 0);
}

/* The slots file is held where the worker's filter refuses every write, resize, lock and dup of it. */
static void test_the_slots_file_is_kept_at_connslot_fd(void **state) {
        State *s = *state;
        ConnSlot *slot = NULL;
        struct stat pinned, file;

        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(fstat(CONNSLOT_FD, &pinned), 0);
        assert_int_equal(stat(s->slots, &file), 0);
        assert_true(pinned.st_dev == file.st_dev && pinned.st_ino == file.st_ino);
        assert_int_equal(fcntl(CONNSLOT_FD, F_GETFL) & O_ACCMODE, O_RDWR);
        slot = connslot_release(slot);
        assert_int_equal(fcntl(CONNSLOT_FD, F_GETFD), -1); /* closed with the slot */
}

/* A regular file or a directory where a FIFO belongs would poll readable for ever: an idle worker would
 * spin on it. It is refused, not polled. */
static void test_an_evict_entry_that_is_not_a_fifo_is_refused(void **state) {
        State *s = *state;
        ConnSlot *slot = NULL;
        char path[128];
        int fd;

        (void) snprintf(path, sizeof(path), "%s/connections/evict-0", s->dir); /* slot 0's */
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(connslot_take(s->dir, 16, &slot), 0);
        assert_int_equal(connslot_evictable_fd(slot), -EPERM);
        assert_int_equal(connslot_evicted(slot), 0);
        connslot_evictable_end(slot);
        assert_int_equal(rmdir(path), 0);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(close(fd), 0);
        assert_int_equal(connslot_evictable_fd(slot), -EPERM);
        connslot_evictable_end(slot);
        assert_int_equal(unlink(path), 0); /* a FIFO of ours again: polled */
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_true(connslot_evictable_fd(slot) >= 0);
        connslot_evictable_end(slot);
        if (geteuid() == 0) { /* a FIFO of another user than the directory's: refused */
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(connslot_evictable_fd(slot), -EPERM);
                connslot_evictable_end(slot);
        }
        slot = connslot_release(slot);
}

/* A slots file that is not a regular file (a FIFO put there) is not used. */
static void test_a_slots_file_that_is_not_a_regular_file_is_refused(void **state) {
        State *s = *state;
        ConnSlot *slot = NULL;

        assert_int_equal(mkfifo(s->slots, 0600), 0);
        assert_int_equal(connslot_take(s->dir, 16, &slot), -EPERM);
        assert_null(slot);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_the_first_connection_takes_slot_zero, state_setup,
                                                state_teardown),
                cmocka_unit_test_setup_teardown(test_it_takes_the_lowest_free_slot_and_counts_every_held_one,
                                                state_setup, state_teardown),
                cmocka_unit_test_setup_teardown(test_a_released_slot_is_free_again, state_setup,
                                                state_teardown),
                cmocka_unit_test_setup_teardown(test_held_slots_up_to_the_end_count_each_and_make_pressure,
                                                state_setup, state_teardown),
                cmocka_unit_test_setup_teardown(test_when_every_slot_is_held_it_counts_itself_beyond_them,
                                                state_setup, state_teardown),
                cmocka_unit_test_setup_teardown(test_the_slots_file_is_kept_at_connslot_fd, state_setup,
                                                state_teardown),
                cmocka_unit_test_setup_teardown(test_an_evict_entry_that_is_not_a_fifo_is_refused,
                                                state_setup, state_teardown),
                cmocka_unit_test_setup_teardown(test_a_slots_file_that_is_not_a_regular_file_is_refused,
                                                state_setup, state_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
