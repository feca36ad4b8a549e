/* installer-packages: the package set of the new generation and the files that record it there (see
 * installer.h). The set is the requirement file's packages, then those of the current generation's
 * extra-packages.txt, then the PACKAGE arguments, a later one replacing an earlier one of the same name.
 * An npm tarball is named by the package.json inside it, and is copied into the generation, where npm
 * and the next generations find it. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/generation.h"
#include "manager/installer.h"
#include "manager/requirements.h"

#define EXTRA_PACKAGES_NAME "extra-packages.txt"
#define TARBALLS_DIR "tarballs"
#define PACKAGE_JSON_MAX (4U << 20)

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);

static int requirement_copy(const Requirement *req, Requirement *ret) {
        _cleanup_free_ char *name = NULL, *text = NULL;

        name = req->name ? strdup(req->name) : NULL;
        text = strdup(req->text);
        if ((req->name && !name) || !text)
                return -ENOMEM;
        *ret = (Requirement){ .name = TAKE_PTR(name), .text = TAKE_PTR(text), .tarball = req->tarball };
        return 0;
}

/* Runs `tar -xzOf - package/package.json` on the tarball and returns the "name" of that file. npm pack
 * always puts a package under "package/". */
static int tarball_package_name(const char *path, char **ret, char **reterr) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_close_ int in_fd = -EBADF, pipe_r = -EBADF, pipe_w = -EBADF;
        _cleanup_free_ char *text = NULL;
        json_object *name;
        int fds[2], status, r;
        pid_t pid;

        in_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (in_fd < 0)
                return failf(reterr, -errno, "cannot read '%s': %m", path);
        if (pipe2(fds, O_CLOEXEC) < 0)
                return failf(reterr, -errno, "cannot make a pipe: %m");
        pipe_r = fds[0];
        pipe_w = fds[1];
        pid = fork();
        if (pid < 0)
                return failf(reterr, -errno, "cannot fork: %m");
        if (pid == 0) {
                char *const argv[] = { (char *) "tar", (char *) "-xzOf", (char *) "-",
                                       (char *) "package/package.json", NULL };
                char *const envp[] = { (char *) "PATH=" TOOL_PATH, (char *) "LC_ALL=C", NULL };
                int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                sigset_t none;

                if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0 || null_fd < 0 ||
                    dup2(in_fd, STDIN_FILENO) < 0 || dup2(pipe_w, STDOUT_FILENO) < 0 ||
                    dup2(null_fd, STDERR_FILENO) < 0)
                        _exit(127);
                execvpe("tar", argv, envp);
                _exit(127);
        }
        pipe_w = safe_close(pipe_w);
        in_fd = safe_close(in_fd);
        r = read_full_fd(pipe_r, PACKAGE_JSON_MAX, &text, NULL);
        pipe_r = safe_close(pipe_r);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return failf(reterr, -errno, "cannot wait for tar: %m");
        if (r < 0)
                return failf(reterr, r, "cannot read package/package.json of '%s': %m", path);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return failf(reterr, -EBADMSG,
                             "'%s' is not a package tarball: it has no package/package.json", path);
        o = json_tokener_parse(text);
        if (!o || !json_object_object_get_ex(o, "name", &name) ||
            !json_object_is_type(name, json_type_string) ||
            !requirement_npm_name_is_valid(json_object_get_string(name)))
                return failf(reterr, -EBADMSG,
                             "'%s' is not a package tarball: its package.json has no valid name", path);
        *ret = strdup(json_object_get_string(name));
        if (!*ret)
                return -ENOMEM;
        return 0;
}

/* Reads what the current generation installed for InstallDependencies. Tarballs are kept in the
 * generation ("tarballs/<file>.tgz" in the file) and are read from there. */
static int read_extra_packages(const Installer *inst, RequirementSet *set, char **reterr) {
        _cleanup_free_ char *gen = NULL, *path = NULL, *text = NULL;
        uint64_t current;
        unsigned lineno = 0;
        char *line, *next;
        int r;

        r = generation_current(inst->packages_dir, &current);
        if (r < 0)
                return failf(reterr, r, "cannot read the current generation of %s: %m", inst->packages_dir);
        if (current == 0)
                return 0;
        if (asprintf(&gen, "%s/gen-%" PRIu64, inst->packages_dir, current) < 0 ||
            asprintf(&path, "%s/" EXTRA_PACKAGES_NAME, gen) < 0)
                return -ENOMEM;
        r = read_full_file(path, REQUIREMENT_FILE_MAX, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return failf(reterr, r, "cannot read %s: %m", path);

        /* One argument of InstallDependencies per line, as the installer wrote it; no continuations. */
        for (line = text; line; line = next) {
                _cleanup_(requirement_done) Requirement req = { 0 };
                _cleanup_free_ char *abs = NULL, *err = NULL;
                const char *arg;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                lineno++;
                line += strspn(line, " \t");
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                arg = line;
                if (runtime_get(inst->language)->requirements == REQUIREMENTS_NPM &&
                    strncmp(line, TARBALLS_DIR "/", 9) == 0) { /* only npm's grammar has tarballs */
                        if (strchr(line + 9, '/') || line[9] == '.')
                                return failf(reterr, -EBADMSG, "%s:%u: bad tarball name", path, lineno);
                        if (asprintf(&abs, "%s/%s", gen, line) < 0)
                                return -ENOMEM;
                        arg = abs;
                }
                r = requirement_parse(inst->language, arg, &req, &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return failf(reterr, r, "%s:%u: %s", path, lineno, err ?: "invalid");
                if (req.tarball) {
                        r = tarball_package_name(req.text, &req.name, reterr);
                        if (r < 0)
                                return r;
                }
                r = requirement_set_put(set, &req);
                if (r < 0)
                        return failf(reterr, r, "%s: %m", path);
        }
        return 0;
}

/* The file name under tarballs/ of an npm package: '@' dropped, "/" becomes "+" (never in a name). */
static char *tarball_file_name(const char *name) {
        _cleanup_free_ char *f = NULL;

        if (asprintf(&f, "%s.tgz", name[0] == '@' ? name + 1 : name) < 0)
                return NULL;
        for (char *p = f; *p; p++)
                if (*p == '/')
                        *p = '+';
        return TAKE_PTR(f);
}

static int copy_file(const char *from, int dir_fd, const char *to) {
        _cleanup_close_ int in = -EBADF, out = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;

        in = open(from, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (in < 0)
                return -errno;
        if (fstat(in, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        out = openat(dir_fd, to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (out < 0)
                return -errno;
        buf = malloc(1U << 16);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(in, buf, 1U << 16);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                for (ssize_t done = 0; done < n;) {
                        ssize_t w = write(out, buf + done, (size_t) (n - done));

                        if (w < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        done += w;
                }
        }
}

/* Copies every tarball of set into the new generation, where npm and later generations find it, and
 * points the requirement's text at the copy; kept gets "tarballs/<file>" for each, by name. */
static int keep_tarballs(const Installer *inst, RequirementSet *set, RequirementSet *kept, char **reterr) {
        _cleanup_close_ int gen_fd = -EBADF, dir_fd = -EBADF;
        bool made = false;
        int r;

        for (size_t i = 0; i < set->n; i++) {
                Requirement *req = &set->items[i];
                _cleanup_(requirement_done) Requirement k = { 0 };
                _cleanup_free_ char *file = NULL, *copy = NULL;

                if (!req->tarball)
                        continue;
                if (!made) {
                        gen_fd = open(inst->gen_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (gen_fd < 0)
                                return failf(reterr, -errno, "cannot open %s: %m", inst->gen_path);
                        if (mkdirat(gen_fd, TARBALLS_DIR, 0755) < 0)
                                return failf(reterr, -errno, "cannot make %s/" TARBALLS_DIR ": %m",
                                             inst->gen_path);
                        dir_fd = openat(gen_fd, TARBALLS_DIR,
                                        O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (dir_fd < 0)
                                return failf(reterr, -errno, "cannot open %s/" TARBALLS_DIR ": %m",
                                             inst->gen_path);
                        made = true;
                }
                file = tarball_file_name(req->name);
                if (!file)
                        return -ENOMEM;
                r = copy_file(req->text, dir_fd, file);
                if (r < 0)
                        return failf(reterr, r, "cannot copy '%s' into the generation: %m", req->text);
                if (asprintf(&copy, "%s/" TARBALLS_DIR "/%s", inst->gen_path, file) < 0)
                        return -ENOMEM;
                free(req->text);
                req->text = TAKE_PTR(copy);

                k.name = strdup(req->name);
                if (!k.name || asprintf(&k.text, TARBALLS_DIR "/%s", file) < 0)
                        return -ENOMEM;
                k.tarball = true;
                r = requirement_set_put(kept, &k);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --remove: takes the package named arg out of extra (what InstallDependencies added). A package of
 * the requirement file is refused: the next refresh would bring it back. */
static int remove_package(const Installer *inst, const RequirementSet *from_file, RequirementSet *extra,
                          const char *arg, char **reterr) {
        _cleanup_free_ char *name = NULL, *err = NULL;
        int r;

        r = requirement_name_parse(inst->language, arg, &name, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return failf(reterr, r, "package %s", err ?: "invalid");
        for (size_t i = 0; i < extra->n; i++)
                if (streq(extra->items[i].name, name)) {
                        requirement_done(&extra->items[i]);
                        memmove(extra->items + i, extra->items + i + 1,
                                (extra->n - i - 1) * sizeof(Requirement));
                        extra->n--;
                        return 0;
                }
        for (size_t i = 0; i < from_file->n; i++)
                if (streq(from_file->items[i].name, name))
                        return failf(
                                reterr, -EINVAL,
                                "package '%s' comes from the requirement file %s: remove it there, then "
                                "refresh the dependencies",
                                name, inst->requirements);
        return failf(reterr, -ENOENT, "package '%s' is not installed: no earlier install added it", name);
}

/* Builds the generation's package set (all) and what stays for later refreshes (extra). */
int installer_gather_packages(Installer *inst, RequirementSet *all, RequirementSet *extra, char **reterr) {
        _cleanup_(requirement_set_done) RequirementSet from_file = { 0 }, before = { 0 }, kept = { 0 };
        int r;

        if (inst->requirements) {
                r = requirements_read_file(inst->language, inst->requirements, &from_file, reterr);
                if (r < 0)
                        return failf(reterr, r, "cannot read %s: %m", inst->requirements);
        }
        r = read_extra_packages(inst, &before, reterr);
        if (r < 0)
                return r;

        /* extra: what was added before, then the arguments; all: the file's, then extra. */
        for (size_t i = 0; i < before.n; i++) {
                Requirement copy;

                r = requirement_copy(&before.items[i], &copy);
                if (r < 0)
                        return r;
                r = requirement_set_put(extra, &copy);
                if (r < 0) {
                        requirement_done(&copy);
                        return failf(reterr, r, "too many packages: %m");
                }
        }
        for (size_t i = 0; inst->remove && i < inst->n_packages; i++) {
                r = remove_package(inst, &from_file, extra, inst->packages[i], reterr);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; !inst->remove && i < inst->n_packages; i++) {
                _cleanup_(requirement_done) Requirement req = { 0 };
                _cleanup_free_ char *err = NULL;

                r = requirement_parse(inst->language, inst->packages[i], &req, &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return failf(reterr, r, "package %s", err ?: "invalid");
                if (req.tarball) {
                        r = tarball_package_name(req.text, &req.name, reterr);
                        if (r < 0)
                                return r;
                }
                r = requirement_set_put(extra, &req);
                if (r < 0)
                        return failf(reterr, r, "too many packages: %m");
        }

        *all = from_file;
        from_file = (RequirementSet){ 0 };
        for (size_t i = 0; i < extra->n; i++) {
                Requirement copy;

                r = requirement_copy(&extra->items[i], &copy);
                if (r < 0)
                        return r;
                r = requirement_set_put(all, &copy);
                if (r < 0) {
                        requirement_done(&copy);
                        return failf(reterr, r, "too many packages: %m");
                }
        }

        /* Tarballs go into the generation; extra-packages.txt names them there. */
        r = keep_tarballs(inst, all, &kept, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < extra->n; i++)
                for (size_t j = 0; extra->items[i].tarball && j < kept.n; j++)
                        if (streq(extra->items[i].name, kept.items[j].name)) {
                                free(extra->items[i].text);
                                extra->items[i].text = TAKE_PTR(kept.items[j].text);
                                break;
                        }
        return 0;
}

/* ---- the files of the generation ---- */

static int write_file_at(const char *dir, const char *name, const char *content, char **reterr) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *path = NULL;
        size_t len = strlen(content);

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0)
                return failf(reterr, -errno, "cannot create %s: %m", path);
        for (size_t done = 0; done < len;) {
                ssize_t n = write(fd, content + done, len - done);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return failf(reterr, -errno, "cannot write %s: %m", path);
                }
                done += (size_t) n;
        }
        return 0;
}

/* The lines of set after a comment header, as one malloc()ed string. */
static int format_lines(const char *header, const RequirementSet *set, char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs(header, f);
        for (size_t i = 0; i < set->n; i++)
                fprintf(f, "%s\n", set->items[i].text);
        if (fclose(TAKE_PTR(f)) != 0) /* sets buf */
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

int installer_write_generation_files(const Installer *inst, const RequirementSet *all,
                                     const RequirementSet *extra, char **reterr) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = format_lines(
                "# Installed with InstallDependencies (difysandbox-installer); every new generation\n"
                "# keeps these, until an argument of the same name replaces one.\n",
                extra, &text);
        if (r < 0)
                return r;
        r = write_file_at(inst->gen_path, EXTRA_PACKAGES_NAME, text, reterr);
        if (r < 0)
                return r;
        free(TAKE_PTR(text));

        switch (runtime_get(inst->language)->package_tool) {
        case PACKAGE_TOOL_PIP:
                r = format_lines("# The packages of this generation, as pip installed them "
                                 "(difysandbox-installer).\n",
                                 all, &text);
                if (r < 0)
                        return r;
                return write_file_at(inst->gen_path, "requirements.txt", text, reterr);
        case PACKAGE_TOOL_NPM:
                break;
        case _PACKAGE_TOOL_MAX:
                return -EINVAL;
        }
        /* npm records what it installs in here. */
        return write_file_at(inst->gen_path, "package.json",
                             "{\n"
                             "  \"name\": \"difysandbox-packages\",\n"
                             "  \"version\": \"1.0.0\",\n"
                             "  \"description\": \"The packages of a difysandbox dependency generation\",\n"
                             "  \"private\": true\n"
                             "}\n",
                             reterr);
}
