/* test-requirements: src/manager/requirements.c. Plain requirements pass with the name that deduplicates
 * them; everything else (options, URLs, direct references, paths, variables, control characters) is
 * refused with the exact message an operator sees: the argument or file:line, the text, the reason. */

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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "manager/requirements.h"

/* arg must pass, deduplicating under name, given to the tool as text. */
static void check_ok(Language language, const char *arg, const char *name, const char *text) {
        _cleanup_free_ char *err = NULL;
        Requirement req = { 0 };
        int r;

        r = requirement_parse(language, arg, &req, &err);
        if (r < 0)
                fail_msg("'%s' refused: %s", arg, err ? err : "(no message)");
        assert_null(err);
        assert_string_equal(req.name, name);
        assert_string_equal(req.text, text);
        assert_false(req.tarball);
        assert_int_equal(requirement_check(language, arg, NULL), 0);
        requirement_done(&req);
        assert_null(req.name);
        assert_null(req.text);
}

/* arg must be refused with a message that contains reason and starts with the quoted argument. */
static void check_refused(Language language, const char *arg, const char *reason) {
        _cleanup_free_ char *err = NULL;
        Requirement req = { 0 };
        int r;

        r = requirement_parse(language, arg, &req, &err);
        if (r >= 0)
                fail_msg("'%s' passed as '%s'", arg, req.name ? req.name : "(tarball)");
        assert_int_equal(r, -EINVAL);
        assert_non_null(err);
        assert_true(err[0] == '\'');
        if (!strstr(err, reason))
                fail_msg("'%s': message '%s' lacks '%s'", arg, err, reason);
        assert_null(strchr(err, '\n'));
        assert_null(req.name);
        assert_null(req.text);
}

static void test_python_plain_requirements(void **state) {
        check_ok(LANGUAGE_PYTHON3, "requests", "requests", "requests");
        check_ok(LANGUAGE_PYTHON3, "  requests==2.31.0\t", "requests", "requests==2.31.0");
        check_ok(LANGUAGE_PYTHON3, "Foo_Bar.baz~=1.4", "foo-bar-baz", "Foo_Bar.baz~=1.4");
        check_ok(LANGUAGE_PYTHON3, "A__-._b>=1", "a-b", "A__-._b>=1");
        check_ok(LANGUAGE_PYTHON3, "requests[socks, security] >= 2.0, < 3 ; python_version >= \"3.8\"",
                 "requests", "requests[socks, security] >= 2.0, < 3 ; python_version >= \"3.8\"");
        check_ok(LANGUAGE_PYTHON3, "pkg (>=1.0,!=1.5.*)", "pkg", "pkg (>=1.0,!=1.5.*)");
        check_ok(LANGUAGE_PYTHON3, "pkg===1.0+local.7", "pkg", "pkg===1.0+local.7");
        check_ok(LANGUAGE_PYTHON3, "pkg[]", "pkg", "pkg[]");
        check_ok(LANGUAGE_PYTHON3, "pkg==1.0rc1;sys_platform=='linux' and platform_machine!='armv7l'", "pkg",
                 "pkg==1.0rc1;sys_platform=='linux' and platform_machine!='armv7l'");
        check_ok(LANGUAGE_PYTHON3, "x", "x", "x");
        check_ok(LANGUAGE_PYTHON3, "zope.interface", "zope-interface", "zope.interface");
        check_ok(LANGUAGE_PYTHON3, "tar", "tar", "tar");
        check_ok(LANGUAGE_PYTHON3, "supabase", "supabase", "supabase"); /* upstream's whole file */
}

static void test_python_refusals(void **state) {
        check_refused(LANGUAGE_PYTHON3, "-r other.txt",
                      "options (-r, -e, --index-url, ...) are not allowed");
        check_refused(LANGUAGE_PYTHON3, "--index-url=http://evil/simple", "options");
        check_refused(LANGUAGE_PYTHON3, " -e .", "options");
        check_refused(LANGUAGE_PYTHON3, "--extra-index-url http://evil/", "options");
        check_refused(LANGUAGE_PYTHON3, "requests==2.0 --hash=sha256:abcd", "per-requirement options");
        check_refused(LANGUAGE_PYTHON3, "requests\t--config-settings=x=y", "per-requirement options");
        check_refused(LANGUAGE_PYTHON3, "https://example.com/pkg-1.0.whl", "URLs are not allowed");
        check_refused(LANGUAGE_PYTHON3, "git+https://example.com/repo.git", "URLs are not allowed");
        check_refused(LANGUAGE_PYTHON3, "pkg @ https://example.com/pkg-1.0.whl", "direct references");
        check_refused(LANGUAGE_PYTHON3, "pkg[extra]@file:///tmp/pkg", "direct references");
        check_refused(LANGUAGE_PYTHON3, "./local/dir", "paths are not allowed");
        check_refused(LANGUAGE_PYTHON3, "/abs/pkg-1.0.whl", "paths are not allowed");
        check_refused(LANGUAGE_PYTHON3, "~/pkg", "paths are not allowed");
        check_refused(LANGUAGE_PYTHON3, "pkg-1.0.tar.gz", "ending like an archive");
        check_refused(LANGUAGE_PYTHON3, "pkg-1.0-py3-none-any.WHL; python_version > '3'",
                      "ending like an archive");
        check_refused(LANGUAGE_PYTHON3, "pkg.zip[extra]", "ending like an archive");
        check_refused(LANGUAGE_PYTHON3, "dir/pkg", "paths are not allowed");
        check_refused(LANGUAGE_PYTHON3, "pkg==${VERSION}", "environment variables");
        check_refused(LANGUAGE_PYTHON3, "", "empty");
        check_refused(LANGUAGE_PYTHON3, "   ", "empty");
        check_refused(LANGUAGE_PYTHON3, "pkg\n-r x", "control characters");
        check_refused(LANGUAGE_PYTHON3, "pkg\x1b[31m", "control characters");
        check_refused(LANGUAGE_PYTHON3, "p\xc3\xa4kg", "ASCII");
        check_refused(LANGUAGE_PYTHON3, "pkg-", "project name");
        check_refused(LANGUAGE_PYTHON3, "_pkg", "project name");
        check_refused(LANGUAGE_PYTHON3, "pkg==", "a version must follow");
        check_refused(LANGUAGE_PYTHON3, "pkg=1.0", "invalid version specifier");
        check_refused(LANGUAGE_PYTHON3, "pkg (>=1.0", "')' expected");
        check_refused(LANGUAGE_PYTHON3, "pkg[a,", "invalid extras");
        check_refused(LANGUAGE_PYTHON3, "pkg;", "invalid environment marker");
        check_refused(LANGUAGE_PYTHON3, "pkg; python_version < '3' # x", "invalid environment marker");
        check_refused(LANGUAGE_PYTHON3, "pkg 1.0", "not a requirement");
}

static void test_message_format(void **state) {
        _cleanup_free_ char *err = NULL, *long_arg = NULL;

        assert_int_equal(requirement_check(LANGUAGE_PYTHON3, "-r other.txt", &err), -EINVAL);
        assert_string_equal(err, "'-r other.txt': options (-r, -e, --index-url, ...) are not allowed: only "
                                 "package requirements");
        free(err);
        err = NULL;

        /* a long argument is shortened, a control character shown as '?' */
        long_arg = malloc(1001);
        assert_non_null(long_arg);
        memset(long_arg, 'a', 1000);
        long_arg[0] = '-';
        long_arg[1000] = '\0';
        assert_int_equal(requirement_check(LANGUAGE_PYTHON3, long_arg, &err), -EINVAL);
        assert_true(strlen(err) < 250);
        assert_non_null(strstr(err, "...': options"));
        free(err);
        err = NULL;
        assert_int_equal(requirement_check(LANGUAGE_NODEJS, "a\rb", &err), -EINVAL);
        assert_string_equal(err, "'a?b': control characters are not allowed");
}

static void test_npm_specs(void **state) {
        check_ok(LANGUAGE_NODEJS, "lodash", "lodash", "lodash");
        check_ok(LANGUAGE_NODEJS, "lodash@4.17.21", "lodash", "lodash@4.17.21");
        check_ok(LANGUAGE_NODEJS, " @types/node@^20.1 ", "@types/node", "@types/node@^20.1");
        check_ok(LANGUAGE_NODEJS, "@scope/pkg", "@scope/pkg", "@scope/pkg");
        check_ok(LANGUAGE_NODEJS, "left-pad@>=1.0.0 <2 || 3.x", "left-pad", "left-pad@>=1.0.0 <2 || 3.x");
        check_ok(LANGUAGE_NODEJS, "express@latest", "express", "express@latest");
        check_ok(LANGUAGE_NODEJS, "JSONStream@~1.3", "JSONStream", "JSONStream@~1.3");

        check_refused(LANGUAGE_NODEJS, "-g", "options are not allowed");
        check_refused(LANGUAGE_NODEJS, "--registry=http://evil/", "options");
        check_refused(LANGUAGE_NODEJS, "git+https://github.com/user/repo.git", "URLs and protocols");
        check_refused(LANGUAGE_NODEJS, "github:user/repo", "URLs and protocols");
        check_refused(LANGUAGE_NODEJS, "file:../pkg", "URLs and protocols");
        check_refused(LANGUAGE_NODEJS, "alias@npm:lodash@4", "URLs and protocols");
        check_refused(LANGUAGE_NODEJS, "user/repo", "repositories (user/repo)");
        check_refused(LANGUAGE_NODEJS, "./dir", "paths must be absolute");
        check_refused(LANGUAGE_NODEJS, "~/pkg.tgz", "paths must be absolute");
        check_refused(LANGUAGE_NODEJS, "lodash@", "a version range must follow '@'");
        check_refused(LANGUAGE_NODEJS, "lodash@1.0#x", "invalid version range");
        check_refused(LANGUAGE_NODEJS, "lodash@$(id)", "invalid version range");
        check_refused(LANGUAGE_NODEJS, "_private", "invalid package name");
        check_refused(LANGUAGE_NODEJS, ".hidden", "paths must be absolute");
        check_refused(LANGUAGE_NODEJS, "two words", "invalid package name");
        check_refused(LANGUAGE_NODEJS, "@scope", "invalid package name");
        check_refused(LANGUAGE_NODEJS, "@/pkg", "invalid package name");
        check_refused(LANGUAGE_NODEJS, "@scope/a/b", "invalid package name");
        check_refused(LANGUAGE_NODEJS, "", "empty");

        assert_true(requirement_npm_name_is_valid("lodash"));
        assert_true(requirement_npm_name_is_valid("@types/node"));
        assert_false(requirement_npm_name_is_valid("lodash@1"));
        assert_false(requirement_npm_name_is_valid("../x"));
        assert_false(requirement_npm_name_is_valid("@a/b/c"));
        assert_false(requirement_npm_name_is_valid(""));
        assert_false(requirement_npm_name_is_valid(NULL));
        {
                char name[216];

                memset(name, 'a', 215);
                name[215] = '\0';
                assert_false(requirement_npm_name_is_valid(name)); /* npm's 214 bytes */
                name[214] = '\0';
                assert_true(requirement_npm_name_is_valid(name));
        }
}

static void test_npm_tarballs(void **state) {
        char dir[] = "/tmp/test-requirements-XXXXXX";
        _cleanup_free_ char *tgz = NULL, *txt = NULL, *subdir = NULL, *missing = NULL, *err = NULL;
        Requirement req = { 0 };
        int fd;

        assert_non_null(mkdtemp(dir));
        assert_true(asprintf(&tgz, "%s/pkg-1.0.0.tgz", dir) >= 0);
        assert_true(asprintf(&txt, "%s/pkg.txt", dir) >= 0);
        assert_true(asprintf(&subdir, "%s/dir.tgz", dir) >= 0);
        assert_true(asprintf(&missing, "%s/missing.tgz", dir) >= 0);
        fd = open(tgz, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        (void) close(fd);
        fd = open(txt, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        (void) close(fd);
        assert_int_equal(mkdir(subdir, 0755), 0);

        assert_int_equal(requirement_parse(LANGUAGE_NODEJS, tgz, &req, &err), 0);
        assert_true(req.tarball);
        assert_null(req.name); /* known once the installer has read its package.json */
        assert_string_equal(req.text, tgz);
        requirement_done(&req);

        check_refused(LANGUAGE_NODEJS, missing, "No such file or directory");
        check_refused(LANGUAGE_NODEJS, subdir, "not a regular file");
        check_refused(LANGUAGE_NODEJS, txt, "ending in .tgz");
        /* relative: npm would take these for files, though they look like names */
        check_refused(LANGUAGE_NODEJS, "pkg-1.0.0.tgz", "paths must be absolute");
        check_refused(LANGUAGE_NODEJS, "pkg@1.TAR.GZ", "paths must be absolute");
        check_refused(LANGUAGE_NODEJS, "pkg.tar", "paths must be absolute");
        check_refused(LANGUAGE_PYTHON3, tgz, "paths are not allowed");

        /* a tarball is an argument only, never a line of nodejs-packages.txt */
        {
                _cleanup_free_ char *text = NULL;
                RequirementSet set = { 0 };

                assert_true(asprintf(&text, "lodash\n%s\n", tgz) >= 0);
                assert_int_equal(
                        requirements_parse(LANGUAGE_NODEJS, text, "nodejs-packages.txt", &set, &err),
                        -EINVAL);
                assert_non_null(strstr(err, "nodejs-packages.txt:2: '"));
                assert_non_null(strstr(err, "paths are not allowed"));
                requirement_set_done(&set);
        }

        (void) unlink(tgz);
        (void) unlink(txt);
        (void) rmdir(subdir);
        (void) rmdir(dir);
}

static void test_python_file(void **state) {
        static const char text[] = "# Python packages of every run\n"
                                   "\n"
                                   "requests==2.31.0   # pinned\n"
                                   "  # an indented comment\n"
                                   "numpy>=1.24,\\\n"
                                   "   <2 \\\n"
                                   "   ; python_version >= '3.9'\r\n"
                                   "Jinja2\n"
                                   "a#b==1\n"
                                   "jinja2==3.1.2\n"
                                   "httpx \\\n"
                                   "# a comment ends a continuation\n"
                                   "last";
        _cleanup_free_ char *err = NULL;
        RequirementSet set = { 0 };

        /* "a#b==1": a '#' not after a blank is no comment (pip's rule), and so no requirement */
        assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, text, "/etc/reqs.txt", &set, &err), -EINVAL);
        assert_string_equal(err, "/etc/reqs.txt:9: 'a#b==1': not a requirement: expected name[extras] "
                                 "<specifiers> ; <marker>");
        requirement_set_done(&set);
        free(err);
        err = NULL;

        {
                _cleanup_free_ char *fixed = strdup(text);
                char *p = strstr(fixed, "a#b==1\n");

                memcpy(p, "#b==1 \n", 7); /* now a comment line */
                assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, fixed, "reqs", &set, &err), 0);
        }
        assert_null(err);
        assert_int_equal(set.n, 5);
        assert_string_equal(set.items[0].name, "requests");
        assert_string_equal(set.items[0].text, "requests==2.31.0");
        assert_string_equal(set.items[1].name, "numpy");
        assert_string_equal(set.items[1].text, "numpy>=1.24,   <2    ; python_version >= '3.9'");
        /* Jinja2, then jinja2==3.1.2: the later wins, where the first stood */
        assert_string_equal(set.items[2].name, "jinja2");
        assert_string_equal(set.items[2].text, "jinja2==3.1.2");
        assert_string_equal(set.items[3].text, "httpx");
        assert_string_equal(set.items[4].text, "last");
        requirement_set_done(&set);
        assert_int_equal(set.n, 0);
        assert_null(set.items);

        /* the line number of a continued requirement is its first line */
        assert_int_equal(
                requirements_parse(LANGUAGE_PYTHON3, "ok\n\nbad \\\n  --hash=sha256:x\n", "f", &set, &err),
                -EINVAL);
        assert_non_null(strstr(err, "f:3: 'bad   --hash=sha256:x': per-requirement options"));
        requirement_set_done(&set);
        free(err);
        err = NULL;

        assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, "x\n-r other.txt\n", "f", &set, &err),
                         -EINVAL);
        assert_string_equal(err,
                            "f:2: '-r other.txt': options (-r, -e, --index-url, ...) are not allowed: only "
                            "package requirements");
        requirement_set_done(&set);

        /* an empty file, and one of comments only */
        assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, "", "f", &set, NULL), 0);
        assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, "# nothing\n\n   \n", "f", &set, NULL), 0);
        assert_int_equal(set.n, 0);
}

static void test_nodejs_file(void **state) {
        _cleanup_free_ char *err = NULL;
        RequirementSet set = { 0 };

        assert_int_equal(requirements_parse(LANGUAGE_NODEJS,
                                            "# Node.js packages\n\nlodash@4  # utilities\n@types/node\n"
                                            "lodash@^4.17\n",
                                            "nodejs-packages.txt", &set, &err),
                         0);
        assert_int_equal(set.n, 2);
        assert_string_equal(set.items[0].name, "lodash");
        assert_string_equal(set.items[0].text, "lodash@^4.17");
        assert_string_equal(set.items[1].name, "@types/node");
        requirement_set_done(&set);

        /* no continuations for npm */
        assert_int_equal(requirements_parse(LANGUAGE_NODEJS, "lodash \\\n", "f", &set, &err), -EINVAL);
        assert_non_null(strstr(err, "f:1: 'lodash \\': paths are not allowed"));
        requirement_set_done(&set);
}

static void test_set_put(void **state) {
        RequirementSet set = { 0 };
        Requirement a = { .name = strdup("a"), .text = strdup("a==1") },
                    b = { .name = strdup("b"), .text = strdup("b") },
                    a2 = { .name = strdup("a"), .text = strdup("a==2") }, none = { .text = strdup("x.tgz") };

        assert_int_equal(requirement_set_put(&set, &a), 0);
        assert_null(a.name); /* moved */
        assert_int_equal(requirement_set_put(&set, &b), 0);
        assert_int_equal(requirement_set_put(&set, &a2), 0);
        assert_int_equal(set.n, 2);
        assert_string_equal(set.items[0].text, "a==2");
        assert_string_equal(set.items[1].text, "b");
        assert_int_equal(requirement_set_put(&set, &none), -EINVAL); /* a tarball whose name is unknown */
        assert_non_null(none.text);
        requirement_done(&none);
        requirement_set_done(&set);
}

static void test_too_many(void **state) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        RequirementSet set = { 0 };
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        for (unsigned i = 0; i <= REQUIREMENTS_MAX; i++)
                fprintf(f, "pkg%u\n", i);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(requirements_parse(LANGUAGE_PYTHON3, text, "big", &set, &err), -E2BIG);
        assert_int_equal(set.n, REQUIREMENTS_MAX);
        assert_string_equal(err, "big:10001: more than 10000 requirements");
        requirement_set_done(&set);
}

static void test_read_file(void **state) {
        char dir[] = "/tmp/test-requirements-XXXXXX";
        _cleanup_free_ char *path = NULL, *missing = NULL, *err = NULL;
        RequirementSet set = { 0 };
        int fd;

        assert_non_null(mkdtemp(dir));
        assert_true(asprintf(&path, "%s/python-requirements.txt", dir) >= 0);
        assert_true(asprintf(&missing, "%s/none.txt", dir) >= 0);

        /* a missing file is empty */
        assert_int_equal(requirements_read_file(LANGUAGE_PYTHON3, missing, &set, &err), 0);
        assert_int_equal(set.n, 0);
        assert_null(err);

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "requests\nhttpx==0.27\n", 21), 21);
        (void) close(fd);
        assert_int_equal(requirements_read_file(LANGUAGE_PYTHON3, path, &set, &err), 0);
        assert_int_equal(set.n, 2);
        requirement_set_done(&set);

        /* a binary file */
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "requests\n\0evil\n", 15), 15);
        (void) close(fd);
        assert_int_equal(requirements_read_file(LANGUAGE_PYTHON3, path, &set, &err), -EINVAL);
        assert_non_null(strstr(err, "NUL bytes"));
        free(err);
        err = NULL;

        /* unreadable: a directory */
        assert_int_equal(requirements_read_file(LANGUAGE_PYTHON3, dir, &set, &err), -EISDIR);
        assert_non_null(strstr(err, "cannot read"));
        assert_non_null(strstr(err, dir));
        assert_int_equal(set.n, 0);

        (void) unlink(path);
        (void) rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_python_plain_requirements),
                cmocka_unit_test(test_python_refusals),
                cmocka_unit_test(test_message_format),
                cmocka_unit_test(test_npm_specs),
                cmocka_unit_test(test_npm_tarballs),
                cmocka_unit_test(test_python_file),
                cmocka_unit_test(test_nodejs_file),
                cmocka_unit_test(test_set_put),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_read_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
