/* test-generation: src/common/generation.c. Each test works in its own mkdtemp() packages directory: a
 * generation is built, switched in, held by a "run" (a shared flock() on its directory, from another open
 * file description, as a run of another process would hold it) and collected; the effects are checked
 * on the file system. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "common/generation.h"

typedef struct Fixture {
        char *root; /* the mkdtemp() directory */
        char *dir;  /* <root>/packages, not created */
} Fixture;

static int rm_rf(const char *path) {
        _cleanup_free_ char *cmd = NULL;

        if (asprintf(&cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", path, path) < 0)
                return -1;
        return system(cmd);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));

        if (!f)
                return -1;
        f->root = strdup("/tmp/test-generation-XXXXXX");
        if (!f->root || !mkdtemp(f->root) || asprintf(&f->dir, "%s/packages", f->root) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void) rm_rf(f->root);
        free(f->root);
        free(f->dir);
        free(f);
        return 0;
}

static char *path_in(const Fixture *f, const char *name) {
        char *p;

        assert_true(asprintf(&p, "%s/%s", f->dir, name) >= 0);
        return p;
}

static bool exists_in(const Fixture *f, const char *name) {
        _cleanup_free_ char *p = path_in(f, name);
        struct stat st;

        return lstat(p, &st) == 0;
}

static void write_in(const Fixture *f, const char *name, const char *content, mode_t mode) {
        _cleanup_free_ char *p = path_in(f, name);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t) strlen(content));
        assert_int_equal(fchmod(fd, mode), 0);
}

static void mkdir_in(const Fixture *f, const char *name, mode_t mode) {
        _cleanup_free_ char *p = path_in(f, name);

        assert_int_equal(mkdir(p, 0700), 0);
        assert_int_equal(chmod(p, mode), 0);
}

static mode_t mode_of(const Fixture *f, const char *name) {
        _cleanup_free_ char *p = path_in(f, name);
        struct stat st;

        assert_int_equal(lstat(p, &st), 0);
        return st.st_mode & 07777;
}

static char *current_target(const Fixture *f) {
        _cleanup_free_ char *p = path_in(f, "current");
        char buf[64];
        ssize_t n = readlink(p, buf, sizeof(buf) - 1);

        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return strdup(buf);
}

/* Opens name in the packages directory and tries to lock it: the fd (locked), or -errno. */
static int try_flock(const Fixture *f, const char *name, int op) {
        _cleanup_free_ char *p = path_in(f, name);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (flock(fd, op | LOCK_NB) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* Builds and commits one generation with a marker file; returns its number. */
static uint64_t make_generation(const Fixture *f) {
        _cleanup_close_ int lock_fd = -EBADF;
        _cleanup_free_ char *marker = NULL;
        uint64_t n = 0;

        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        assert_true(asprintf(&marker, ".gen-%" PRIu64 ".tmp/marker", n) >= 0);
        write_in(f, marker, "x", 0644);
        assert_int_equal(generation_commit(f->dir, n), 0);
        return n;
}

static void test_begin_commit_switches_current(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int lock_fd = -EBADF;
        _cleanup_free_ char *target = NULL;
        uint64_t n = 0, cur = 99;
        int other;

        assert_int_equal(generation_current(f->dir, &cur), 0); /* no directory yet */
        assert_int_equal(cur, 0);

        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        assert_int_equal(n, 1);
        assert_true(lock_fd >= 0);
        assert_true(exists_in(f, ".gen-1.tmp"));
        assert_int_equal(mode_of(f, ".gen-1.tmp"), 0755);
        /* a second installer cannot take the lock while this one holds it */
        other = try_flock(f, ".install.lock", LOCK_EX);
        assert_int_equal(other, -EWOULDBLOCK);
        /* nothing is current before the commit */
        assert_int_equal(generation_current(f->dir, &cur), 0);
        assert_int_equal(cur, 0);

        write_in(f, ".gen-1.tmp/file", "content", 0644);
        assert_int_equal(generation_commit(f->dir, 1), 0);
        assert_false(exists_in(f, ".gen-1.tmp"));
        assert_true(exists_in(f, "gen-1/file"));
        target = current_target(f);
        assert_non_null(target);
        assert_string_equal(target, "gen-1");
        assert_false(exists_in(f, ".current.tmp"));
        assert_int_equal(generation_current(f->dir, &cur), 0);
        assert_int_equal(cur, 1);

        lock_fd = safe_close(lock_fd);
        other = try_flock(f, ".install.lock", LOCK_EX);
        assert_true(other >= 0); /* released with the fd */
        (void) safe_close(other);
}

static void test_abort_removes_everything(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int lock_fd = -EBADF;
        uint64_t n = 0, cur = 0;

        (void) make_generation(f);
        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        assert_int_equal(n, 2);
        mkdir_in(f, ".gen-2.tmp/a", 0755);
        mkdir_in(f, ".gen-2.tmp/a/b", 0755);
        write_in(f, ".gen-2.tmp/a/b/file", "x", 0400);
        assert_int_equal(chmod(f->dir, 0755), 0);
        {
                _cleanup_free_ char *ro = path_in(f, ".gen-2.tmp/a/b");
                assert_int_equal(chmod(ro, 0500), 0); /* read-only: removal must open it up first */
        }
        assert_int_equal(generation_abort(f->dir, 2), 0);
        assert_false(exists_in(f, ".gen-2.tmp"));
        assert_int_equal(generation_current(f->dir, &cur), 0);
        assert_int_equal(cur, 1);
        assert_true(exists_in(f, "gen-1/marker"));
}

static void test_begin_numbers_and_removes_leftovers(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int lock_fd = -EBADF;
        uint64_t n = 0;

        (void) make_generation(f); /* gen-1 */
        /* what a killed installer and a killed collector leave behind */
        mkdir_in(f, ".gen-5.tmp", 0755);
        write_in(f, ".gen-5.tmp/half", "x", 0644);
        mkdir_in(f, ".gen-3.old", 0755);
        mkdir_in(f, "gen-01", 0755); /* not a generation name: left alone and not counted */

        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        assert_int_equal(n, 6); /* never a number that was used, even by a leftover */
        assert_false(exists_in(f, ".gen-5.tmp"));
        assert_false(exists_in(f, ".gen-3.old"));
        assert_true(exists_in(f, "gen-01"));
        assert_true(exists_in(f, "gen-1/marker"));
        assert_true(exists_in(f, ".gen-6.tmp"));
}

static void test_commit_normalizes_modes(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int lock_fd = -EBADF;
        _cleanup_free_ char *fifo = NULL, *link = NULL;
        uint64_t n = 0;
        mode_t old = umask(077); /* a careless umask must not make the generation private */

        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        (void) umask(old);
        mkdir_in(f, ".gen-1.tmp/private", 0700);
        mkdir_in(f, ".gen-1.tmp/shared", 0777);
        write_in(f, ".gen-1.tmp/private/secret", "x", 0600);
        write_in(f, ".gen-1.tmp/shared/writable", "x", 0666);
        write_in(f, ".gen-1.tmp/tool", "#!/bin/sh\n", 0700);
        write_in(f, ".gen-1.tmp/setuid", "x", 04755);
        fifo = path_in(f, ".gen-1.tmp/fifo");
        assert_int_equal(mkfifo(fifo, 0600), 0);
        link = path_in(f, ".gen-1.tmp/link");
        assert_int_equal(symlink("tool", link), 0);

        assert_int_equal(generation_commit(f->dir, n), 0);
        assert_int_equal(mode_of(f, "gen-1"), 0755);
        assert_int_equal(mode_of(f, "gen-1/private"), 0755);
        assert_int_equal(mode_of(f, "gen-1/shared"), 0755);
        assert_int_equal(mode_of(f, "gen-1/private/secret"), 0644);
        assert_int_equal(mode_of(f, "gen-1/shared/writable"), 0644);
        assert_int_equal(mode_of(f, "gen-1/tool"), 0755);
        assert_int_equal(mode_of(f, "gen-1/setuid"), 0755);
        assert_false(exists_in(f, "gen-1/fifo"));
        assert_true(exists_in(f, "gen-1/link"));
}

static void test_remove_entry(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int lock_fd = -EBADF;
        uint64_t n = 0;

        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        mkdir_in(f, ".gen-1.tmp/.home", 0700);
        mkdir_in(f, ".gen-1.tmp/.home/.cache", 0700);
        write_in(f, ".gen-1.tmp/.home/.cache/x", "x", 0600);
        write_in(f, ".gen-1.tmp/keep", "x", 0644);

        assert_int_equal(generation_remove_entry(f->dir, n, ".home"), 0);
        assert_false(exists_in(f, ".gen-1.tmp/.home"));
        assert_true(exists_in(f, ".gen-1.tmp/keep"));
        assert_int_equal(generation_remove_entry(f->dir, n, ".home"), 0); /* already gone */
        assert_int_equal(generation_remove_entry(f->dir, n, "../gen-1"), -EINVAL);
        assert_int_equal(generation_remove_entry(f->dir, n, ".."), -EINVAL);
        assert_true(exists_in(f, ".gen-1.tmp"));
}

static void test_acquire(void **state) {
        Fixture *f = *state;
        Generation g = GENERATION_NULL;
        _cleanup_free_ char *expect = NULL;
        int other;

        /* no packages directory, then no current: no generation, and no error */
        assert_int_equal(generation_acquire(f->dir, &g), 0);
        assert_int_equal(g.number, 0);
        assert_int_equal(g.dir_fd, -EBADF);
        assert_null(g.path);
        assert_int_equal(mkdir(f->dir, 0755), 0);
        assert_int_equal(generation_acquire(f->dir, &g), 0);
        assert_int_equal(g.number, 0);

        (void) make_generation(f);
        (void) make_generation(f);
        assert_int_equal(generation_acquire(f->dir, &g), 0);
        assert_int_equal(g.number, 2);
        expect = path_in(f, "gen-2");
        assert_string_equal(g.path, expect);
        assert_true(faccessat(g.dir_fd, "marker", F_OK, 0) == 0);
        /* it is share-locked: a collector cannot have it, another run can */
        assert_int_equal(try_flock(f, "gen-2", LOCK_EX), -EWOULDBLOCK);
        other = try_flock(f, "gen-2", LOCK_SH);
        assert_true(other >= 0);
        (void) safe_close(other);

        generation_release(&g);
        assert_int_equal(g.number, 0);
        assert_int_equal(g.dir_fd, -EBADF);
        assert_null(g.path);
        other = try_flock(f, "gen-2", LOCK_EX);
        assert_true(other >= 0);
        (void) safe_close(other);
        generation_release(&g); /* twice is harmless */

        assert_int_equal(generation_acquire("relative/dir", &g), -EINVAL);
}

static void test_bad_current(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *link = NULL;
        Generation g = GENERATION_NULL;
        uint64_t cur = 0;

        (void) make_generation(f);
        link = path_in(f, "current");
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("/etc", link), 0);
        assert_int_equal(generation_current(f->dir, &cur), -EBADMSG);
        assert_int_equal(generation_acquire(f->dir, &g), -EBADMSG);
        assert_int_equal(g.number, 0);
        /* not knowing which one is current, the collector removes nothing */
        assert_int_equal(generation_collect(f->dir), -EBADMSG);
        assert_true(exists_in(f, "gen-1/marker"));
}

static void test_collect_skips_held_and_current(void **state) {
        Fixture *f = *state;
        Generation run = GENERATION_NULL;
        _cleanup_close_ int held = -EBADF, lock_fd = -EBADF;
        uint64_t n;

        (void) make_generation(f);                             /* gen-1 */
        assert_int_equal(generation_acquire(f->dir, &run), 0); /* a run starts on gen-1 */
        assert_int_equal(run.number, 1);
        (void) make_generation(f);             /* gen-2 */
        (void) make_generation(f);             /* gen-3, current */
        held = try_flock(f, "gen-2", LOCK_SH); /* another run, on gen-2 */
        assert_true(held >= 0);

        assert_int_equal(generation_collect(f->dir), 0);
        assert_true(exists_in(f, "gen-1/marker"));
        assert_true(exists_in(f, "gen-2/marker"));
        assert_true(exists_in(f, "gen-3/marker"));

        held = safe_close(held); /* the gen-2 run ends */
        assert_int_equal(generation_collect(f->dir), 1);
        assert_false(exists_in(f, "gen-2"));
        assert_false(exists_in(f, ".gen-2.old"));
        assert_true(exists_in(f, "gen-1/marker"));
        /* the run still reads its generation */
        assert_true(faccessat(run.dir_fd, "marker", F_OK, 0) == 0);

        generation_release(&run);
        /* a half-built generation is not the collector's */
        assert_int_equal(generation_begin(f->dir, &n, &lock_fd), 0);
        assert_int_equal(n, 4);
        assert_int_equal(generation_collect(f->dir), 1);
        assert_false(exists_in(f, "gen-1"));
        assert_true(exists_in(f, "gen-3/marker"));
        assert_true(exists_in(f, ".gen-4.tmp"));
        assert_int_equal(generation_collect(f->dir), 0); /* never the current one */
        assert_true(exists_in(f, "gen-3/marker"));
}

typedef struct Waiter {
        const char *dir;
        Generation g;
        int r;
        volatile bool done;
} Waiter;

static void *acquire_thread(void *p) {
        Waiter *w = p;

        w->r = generation_acquire(w->dir, &w->g);
        w->done = true;
        return NULL;
}

/* A run that resolves current while the collector holds that generation waits, sees it removed, and
 * resolves current again. */
static void test_acquire_retries_after_collection(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int collector = -EBADF;
        _cleanup_free_ char *link = NULL, *gen1 = NULL, *old = NULL;
        Waiter w = { .dir = f->dir, .g = GENERATION_NULL };
        pthread_t t;

        (void) make_generation(f); /* gen-1 */
        (void) make_generation(f); /* gen-2 */
        link = path_in(f, "current");
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("gen-1", link), 0); /* current is gen-1 again, for now */

        collector = try_flock(f, "gen-1", LOCK_EX);
        assert_true(collector >= 0);
        assert_int_equal(pthread_create(&t, NULL, acquire_thread, &w), 0);
        (void) usleep(300 * 1000);
        assert_false(w.done); /* it waits for the collector */

        /* the collector's steps: current moves on, gen-1 is renamed away, removed, unlocked */
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("gen-2", link), 0);
        gen1 = path_in(f, "gen-1");
        old = path_in(f, ".gen-1.old");
        assert_int_equal(rename(gen1, old), 0);
        assert_int_equal(rm_rf(old), 0);
        collector = safe_close(collector);

        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(w.r, 0);
        assert_int_equal(w.g.number, 2);
        assert_true(faccessat(w.g.dir_fd, "marker", F_OK, 0) == 0);
        generation_release(&w.g);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_begin_commit_switches_current, setup, teardown),
                cmocka_unit_test_setup_teardown(test_abort_removes_everything, setup, teardown),
                cmocka_unit_test_setup_teardown(test_begin_numbers_and_removes_leftovers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_commit_normalizes_modes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_remove_entry, setup, teardown),
                cmocka_unit_test_setup_teardown(test_acquire, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_current, setup, teardown),
                cmocka_unit_test_setup_teardown(test_collect_skips_held_and_current, setup, teardown),
                cmocka_unit_test_setup_teardown(test_acquire_retries_after_collection, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
