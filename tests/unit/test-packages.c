/* test-packages: src/common/packages.c. A runtime directory is laid out in mkdtemp() as
 * difysandbox-prepare-runtime and difysandbox-installer lay it out: <lang>/current -> gen-N holding the
 * runtime tree (Debian's dist-packages with the packages' own egg-info/dist-info metadata),
 * <lang>/packages/current -> gen-N holding what pip or npm installed. The list must be the tree's
 * distributions, then the generation's, each sorted, under the names and versions pip shows, and nothing
 * else. */

#include <errno.h>
#include <fcntl.h>
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
#include "common/packages.h"

static int setup(void **state) {
        char *dir = strdup("/tmp/test-packages-XXXXXX");

        if (!dir || !mkdtemp(dir)) {
                free(dir);
                return -1;
        }
        *state = dir;
        return 0;
}

static int teardown(void **state) {
        _cleanup_free_ char *dir = *state, *cmd = NULL;

        if (asprintf(&cmd, "rm -rf '%s'", dir) < 0)
                return -1;
        return system(cmd) == 0 ? 0 : -1;
}

/* Creates root/rel with its parent directories and the content. */
static void put(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;

        assert_true(asprintf(&path, "%s/%s", root, rel) >= 0);
        for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *p = '/';
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t) strlen(content));
}

static void link_at(const char *root, const char *rel, const char *target) {
        _cleanup_free_ char *path = NULL;

        assert_true(asprintf(&path, "%s/%s", root, rel) >= 0);
        (void) unlink(path);
        assert_int_equal(symlink(target, path), 0);
}

static void expect_list(const char *root, const char *language, const char *const *expected) {
        _cleanup_free_ char *err_path = NULL;
        Package *list = NULL;
        size_t n = 0, want = 0;

        while (expected[2 * want])
                want++;
        assert_int_equal(packages_list(root, language, &list, &n, &err_path), 0);
        assert_null(err_path);
        for (size_t i = 0; i < n && i < want; i++) {
                printf("# %s %s (%s)\n", list[i].name, list[i].version,
                       package_origin_to_string(list[i].origin));
                if (!streq(list[i].name, expected[2 * i]) || !streq(list[i].version, expected[2 * i + 1]))
                        fail_msg("entry %zu is %s %s, expected %s %s", i, list[i].name, list[i].version,
                                 expected[2 * i], expected[2 * i + 1]);
        }
        assert_int_equal(n, want);
        list = packages_free(list, n);
        assert_null(list);
}

#define SITE "usr/lib/python3/dist-packages/"

/* The tree as Debian's python3-requests, python3-certifi and python3-jinja2 lay it out: egg-info
 * directories with PKG-INFO, beside the Debian metadata file that must not be what is listed. */
static void put_python_tree(const char *root, const char *gen) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

        assert_true(asprintf(&a, "python3/%s/.difysandbox-runtime", gen) >= 0);
        put(root, a, "{\"packages\": [{\"name\": \"python3-requests\", \"version\": \"2.28.1+dfsg-1\"}]}");
        assert_true(asprintf(&b, "python3/%s/" SITE "requests-2.28.1.egg-info/PKG-INFO", gen) >= 0);
        put(root, b, "Metadata-Version: 2.1\nName: requests\nVersion: 2.28.1\nSummary: HTTP\n\nbody\n");
        assert_true(asprintf(&c, "python3/%s/" SITE "Jinja2-3.1.2.egg-info/PKG-INFO", gen) >= 0);
        put(root, c, "Metadata-Version: 2.1\nName: Jinja2\nVersion: 3.1.2\n");
        assert_true(asprintf(&d, "python3/%s/" SITE "certifi-2022.9.24.egg-info", gen) >= 0);
        put(root, d, "Metadata-Version: 1.2\nName: certifi\nVersion: 2022.9.24\n"); /* a plain file */
        assert_true(asprintf(&e, "python3/%s/" SITE "requests/__init__.py", gen) >= 0);
        put(root, e, "");
        free(e);
        assert_true(asprintf(&e, "python3/%s/" SITE "charset_normalizer-3.0.1.dist-info/METADATA", gen) >=
                    0);
        put(root, e, "Name: charset_normalizer\nVersion: 3.0.1\n");
}

static void test_nothing_installed(void **state) {
        const char *root = *state;
        static const char *const none[] = { NULL };

        expect_list(root, "python3", none);
        expect_list(root, "nodejs", none);
        put(root, "python3/gen-1/.difysandbox-runtime", "{\"packages\": []}");
        link_at(root, "python3/current", "gen-1");
        expect_list(root, "python3", none); /* a tree without dist-packages */
        put(root, "python3/gen-1/" SITE "six.py", "");
        expect_list(root, "python3", none); /* nor metadata */
        /* a packages directory without a current generation */
        put(root, "python3/packages/.install.lock", "");
        put(root, "python3/packages/.gen-1.tmp/python/a-1.dist-info/METADATA", "Name: a\nVersion: 1\n");
        expect_list(root, "python3", none);
}

static void test_python_runtime_and_generation(void **state) {
        const char *root = *state;
        static const char *const expected[] = {
                /* clang-format off */
                "certifi",            "2022.9.24", /* the tree, sorted */
                "Jinja2",             "3.1.2",
                "charset-normalizer", "3.3.2",     /* the generation, sorted; it shadows the tree's */
                "httpx_extra",        "0.1",       /* charset_normalizer and requests, as on sys.path */
                "legacy",             "1.0",
                "Requests",           "2.31.0",
                "Tinypkg",            "2.0",
                NULL,
                /* clang-format on */
        };

        put_python_tree(root, "gen-3");
        link_at(root, "python3/current", "gen-3");
        /* gen-1 is an older generation: not listed */
        put(root, "python3/packages/gen-1/python/old-1.0.dist-info/METADATA", "Name: old\nVersion: 1.0\n");
        put(root, "python3/packages/gen-2/python/tinypkg-2.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: Tinypkg\nVersion: 2.0\nSummary: x\n\nName: not-a-header\n");
        put(root, "python3/packages/gen-2/python/requests-2.31.0.dist-info/METADATA",
            "Name: Requests\nVersion: 2.31.0\n");
        /* charset-normalizer is the tree's charset_normalizer to pip */
        put(root, "python3/packages/gen-2/python/charset_normalizer-3.3.2.dist-info/METADATA",
            "Name: charset-normalizer\nVersion: 3.3.2\n");
        put(root, "python3/packages/gen-2/python/httpx_extra-0.1.dist-info/METADATA",
            "Metadata-Version: 2.1\r\nVersion:   0.1\r\nName: httpx_extra\r\n\r\n");
        /* skipped: no METADATA, no Version before the body, not a dist-info or egg-info */
        put(root, "python3/packages/gen-2/python/broken-1.0.dist-info/RECORD", "");
        put(root, "python3/packages/gen-2/python/body-1.0.dist-info/METADATA",
            "Name: body\n\nVersion: 1.0\n");
        put(root, "python3/packages/gen-2/python/tinypkg/__init__.py", "");
        put(root, "python3/packages/gen-2/python/legacy-1.0.egg-info/PKG-INFO",
            "Name: legacy\nVersion: 1.0\n"); /* setup.py installs: pip lists them */
        put(root, "python3/packages/gen-2/python/notes.txt", "Name: notes\nVersion: 1\n");
        link_at(root, "python3/packages/current", "gen-2");

        expect_list(root, "python3", expected);
}

static void test_nodejs_generation(void **state) {
        const char *root = *state;
        static const char *const expected[] = {
                "@types/node", "20.5.0", "left-pad", "1.3.0", "lodash", "4.17.21", NULL,
        };

        /* the tree's Debian metadata is not a package list */
        put(root, "nodejs/gen-1/.difysandbox-runtime",
            "{\"packages\": [{\"name\": \"nodejs-runtime\", \"version\": \"20.1\"}]}");
        link_at(root, "nodejs/current", "gen-1");
        put(root, "nodejs/packages/gen-4/node_modules/lodash/package.json",
            "{\"name\": \"lodash\", \"version\": \"4.17.21\", \"main\": \"lodash.js\"}");
        put(root, "nodejs/packages/gen-4/node_modules/left-pad/package.json",
            "{\"version\": \"1.3.0\", \"name\": \"left-pad\"}");
        put(root, "nodejs/packages/gen-4/node_modules/@types/node/package.json",
            "{\"name\": \"@types/node\", \"version\": \"20.5.0\"}");
        /* nested dependencies are not what a run imports by name; broken and hidden entries are skipped */
        put(root, "nodejs/packages/gen-4/node_modules/lodash/node_modules/inner/package.json",
            "{\"name\": \"inner\", \"version\": \"1.0.0\"}");
        put(root, "nodejs/packages/gen-4/node_modules/broken/package.json", "{\"name\": ");
        put(root, "nodejs/packages/gen-4/node_modules/noversion/package.json", "{\"name\": \"noversion\"}");
        put(root, "nodejs/packages/gen-4/node_modules/.bin/x", "");
        put(root, "nodejs/packages/gen-4/node_modules/.package-lock.json", "{}");
        put(root, "nodejs/packages/gen-4/node_modules/@scope/.hidden/package.json",
            "{\"name\": \"@scope/.hidden\", \"version\": \"1\"}");
        put(root, "nodejs/packages/gen-4/package.json",
            "{\"name\": \"difysandbox-packages\", \"version\": \"1.0.0\"}");
        link_at(root, "nodejs/packages/current", "gen-4");

        expect_list(root, "nodejs", expected);
}

static void test_errors(void **state) {
        const char *root = *state;
        _cleanup_free_ char *err_path = NULL, *expect = NULL;
        Package *list = NULL;
        size_t n = 0;

        assert_int_equal(packages_list(root, "ruby", &list, &n, &err_path), -EINVAL);
        assert_null(err_path);

        /* a tree whose dist-packages cannot be read */
        put(root, "python3/gen-1/usr/lib/python3/x.py", "");
        link_at(root, "python3/current", "gen-1");
        link_at(root, "python3/gen-1/usr/lib/python3/dist-packages",
                "/etc"); /* prepare-runtime makes directories, never links */
        assert_int_equal(packages_list(root, "python3", &list, &n, &err_path), -ENOTDIR);
        assert_true(asprintf(&expect, "%s/python3/current", root) >= 0);
        assert_string_equal(err_path, expect);
        free(err_path);
        err_path = NULL;

        /* a packages directory whose current is not a generation */
        link_at(root, "python3/current", "gen-2"); /* no tree */
        put(root, "python3/packages/gen-1/python/x", "");
        link_at(root, "python3/packages/current", "/etc");
        free(expect);
        assert_true(asprintf(&expect, "%s/python3/packages", root) >= 0);
        assert_int_equal(packages_list(root, "python3", &list, &n, &err_path), -EBADMSG);
        assert_string_equal(err_path, expect);
        assert_null(list);
}

/* The list takes the generation's shared lock only while it reads: a collector can remove it after. */
static void test_lock_released(void **state) {
        const char *root = *state;
        _cleanup_free_ char *gen = NULL;
        _cleanup_close_ int fd = -EBADF;
        static const char *const expected[] = { "a", "1", NULL };

        put(root, "python3/packages/gen-1/python/a-1.dist-info/METADATA", "Name: a\nVersion: 1\n");
        link_at(root, "python3/packages/current", "gen-1");
        expect_list(root, "python3", expected);
        assert_true(asprintf(&gen, "%s/python3/packages/gen-1", root) >= 0);
        fd = open(gen, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_nothing_installed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_python_runtime_and_generation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_nodejs_generation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lock_released, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
