/* difysandbox-installer: builds one dependency generation of a language (DESIGN §4, generation.h) with
 * pip or npm, as the unprivileged user that owns the packages directory. The manager starts it in a
 * sandboxed transient unit; everything it needs comes from its command line (the config file holds the
 * API key and is not readable by this user).
 *
 *   difysandbox-installer --language python3|nodejs --packages-dir DIR [--requirements FILE]
 *           [--index-url URL] [--registry URL] [--python PATH] [--npm PATH] [--] [PACKAGE...]
 *
 * The new generation's packages are the requirement file's, then those an operator added earlier with
 * InstallDependencies (the current generation's extra-packages.txt), then the PACKAGE arguments; a later
 * one replaces an earlier one of the same name. An empty set makes an empty generation.
 *
 * Protocol on stdout, one line at a time, for the manager:
 *   progress <0-100> <text>   an estimate, never decreasing
 *   generation <N>            the last line on success (exit status 0): gen-<N> is current
 *   error: <reason>           the last line on failure (exit status 1): current is untouched
 * Every other line is log. The lines of pip and npm are forwarded indented by two spaces, so none of
 * them can pass for a protocol line. SIGTERM, SIGINT or SIGHUP kill pip or npm (their process group)
 * and abort the generation. */

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/generation.h"
#include "common/log.h"
#include "common/utf8.h"
#include "manager/requirements.h"

#define EXTRA_PACKAGES_NAME "extra-packages.txt"
#define TARBALLS_DIR "tarballs"
/* What the installer keeps in the generation only while it builds it. */
#define HOME_DIR ".home"
#define TMP_DIR ".tmp"
#define NPM_CACHE_DIR ".npm-cache"
/* A line of pip or npm output longer than this is forwarded in pieces. */
#define TOOL_LINE_MAX 4096U
#define PACKAGE_JSON_MAX (4U << 20)
#define URL_MAX 2048U
/* How long pip or npm get to go after SIGTERM before SIGKILL. */
#define STOP_TIMEOUT_MSEC 5000
#define DEFAULT_PYTHON "/usr/bin/python3"
#define DEFAULT_NPM "/usr/bin/npm"
#define TOOL_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);

static void strv_freep(char ***p) {
        if (!*p)
                return;
        for (char **s = *p; *s; s++)
                free(*s);
        free(*p);
}

typedef struct Installer {
        Language language;
        const char *packages_dir;
        const char *requirements; /* NULL: none */
        const char *index_url, *registry;
        const char *python, *npm;
        char *const *packages; /* the PACKAGE arguments */
        size_t n_packages;

        uint64_t number; /* the generation being built, 0 before generation_begin() */
        int lock_fd;
        char *gen_path; /* <packages_dir>/.gen-<N>.tmp */
        int signal_fd;
        unsigned progress; /* the last one reported */
} Installer;

#define INSTALLER_NULL                               \
        ((Installer){ .language = _LANGUAGE_INVALID, \
                      .python = DEFAULT_PYTHON,      \
                      .npm = DEFAULT_NPM,            \
                      .lock_fd = -EBADF,             \
                      .signal_fd = -EBADF })

static void installer_done(Installer *inst) {
        if (inst->number > 0)
                (void) generation_abort(inst->packages_dir, inst->number); /* a failure's own error wins */
        inst->lock_fd = safe_close(inst->lock_fd);
        inst->signal_fd = safe_close(inst->signal_fd);
        inst->number = 0;
        free(TAKE_PTR(inst->gen_path));
}

/* Sets *reterr (unless already set) to the formatted message, in which %m is strerror(-r); returns r. */
static int failf(char **reterr, int r, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int failf(char **reterr, int r, const char *format, ...) {
        va_list ap;

        if (*reterr)
                return r;
        errno = r < 0 ? -r : r;
        va_start(ap, format);
        if (vasprintf(reterr, format, ap) < 0)
                *reterr = NULL;
        va_end(ap);
        return r;
}

/* ---- protocol output ---- */

static void report_progress(Installer *inst, unsigned percent, const char *format, ...)
        __attribute__((format(printf, 3, 4)));
static void report_progress(Installer *inst, unsigned percent, const char *format, ...) {
        va_list ap;

        if (percent > 100)
                percent = 100;
        if (percent < inst->progress)
                percent = inst->progress;
        inst->progress = percent;
        printf("progress %u ", percent);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        putchar('\n');
}

/* ---- arguments ---- */

static void help(void) {
        printf("%s --language python3|nodejs --packages-dir DIR [OPTIONS] [--] [PACKAGE...]\n\n"
               "Builds a dependency generation with pip or npm and makes it current.\n\n"
               "  --language LANGUAGE      python3 or nodejs\n"
               "  --packages-dir DIR       the language's packages directory (absolute)\n"
               "  --requirements FILE      the requirement file; a missing file is empty\n"
               "  --index-url URL          python3: pip's package index\n"
               "  --registry URL           nodejs: npm's registry\n"
               "  --python PATH            the interpreter that runs pip (" DEFAULT_PYTHON ")\n"
               "  --npm PATH               npm (" DEFAULT_NPM ")\n"
               "  -h --help                show this help\n",
               program_invocation_short_name);
}

static bool url_is_valid(const char *url) {
        size_t n = strlen(url);

        if (n > URL_MAX)
                return false;
        if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
                return false;
        if (url[strcspn(url, ":") + 3] == '\0' || url[strcspn(url, ":") + 3] == '/')
                return false; /* no host */
        for (const char *p = url; *p; p++)
                if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f)
                        return false;
        return true;
}

/* Returns 1 to go on, 0 after --help, or a negative errno with *reterr. */
static int parse_argv(int argc, char *argv[], Installer *inst, char **reterr) {
        enum {
                ARG_LANGUAGE = 0x100,
                ARG_PACKAGES_DIR,
                ARG_REQUIREMENTS,
                ARG_INDEX_URL,
                ARG_REGISTRY,
                ARG_PYTHON,
                ARG_NPM
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "language", required_argument, NULL, ARG_LANGUAGE },
                { "packages-dir", required_argument, NULL, ARG_PACKAGES_DIR },
                { "requirements", required_argument, NULL, ARG_REQUIREMENTS },
                { "index-url", required_argument, NULL, ARG_INDEX_URL },
                { "registry", required_argument, NULL, ARG_REGISTRY },
                { "python", required_argument, NULL, ARG_PYTHON },
                { "npm", required_argument, NULL, ARG_NPM },
                {},
        };
        int c;

        opterr = 0;
        /* "+": the first argument that is not an option ends them, so that a package that looks like an
         * option is checked, and refused, as a package. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_LANGUAGE:
                        inst->language = language_from_string(optarg);
                        if (inst->language < 0)
                                return failf(reterr, -EINVAL, "unknown language '%s' (python3 or nodejs)",
                                             optarg);
                        break;
                case ARG_PACKAGES_DIR:
                        inst->packages_dir = optarg;
                        break;
                case ARG_REQUIREMENTS:
                        inst->requirements = optarg;
                        break;
                case ARG_INDEX_URL:
                        inst->index_url = optarg;
                        break;
                case ARG_REGISTRY:
                        inst->registry = optarg;
                        break;
                case ARG_PYTHON:
                        inst->python = optarg;
                        break;
                case ARG_NPM:
                        inst->npm = optarg;
                        break;
                case '?':
                        return failf(reterr, -EINVAL, "option '%s' is unknown or lacks its argument",
                                     argv[optind - 1]);
                default:
                        return failf(reterr, -EINVAL, "cannot parse the command line");
                }

        if (inst->language < 0)
                return failf(reterr, -EINVAL, "--language is required");
        if (!inst->packages_dir || inst->packages_dir[0] != '/')
                return failf(reterr, -EINVAL, "--packages-dir with an absolute path is required");
        if (inst->requirements && inst->requirements[0] != '/')
                return failf(reterr, -EINVAL, "--requirements needs an absolute path");
        if (inst->index_url && inst->language != LANGUAGE_PYTHON3)
                return failf(reterr, -EINVAL, "--index-url applies to python3 only");
        if (inst->registry && inst->language != LANGUAGE_NODEJS)
                return failf(reterr, -EINVAL, "--registry applies to nodejs only");
        if (inst->index_url && !url_is_valid(inst->index_url))
                return failf(reterr, -EINVAL, "--index-url '%s' is not an http:// or https:// URL",
                             inst->index_url);
        if (inst->registry && !url_is_valid(inst->registry))
                return failf(reterr, -EINVAL, "--registry '%s' is not an http:// or https:// URL",
                             inst->registry);
        if (inst->python[0] != '/' || inst->npm[0] != '/')
                return failf(reterr, -EINVAL, "--python and --npm need absolute paths");

        inst->packages = argv + optind;
        inst->n_packages = (size_t) (argc - optind);
        return 1;
}

/* ---- the package set ---- */

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
                if (inst->language == LANGUAGE_NODEJS && strncmp(line, TARBALLS_DIR "/", 9) == 0) {
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

/* Builds the generation's package set (all) and what stays for later refreshes (extra). */
static int gather_packages(Installer *inst, RequirementSet *all, RequirementSet *extra, char **reterr) {
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
        for (size_t i = 0; i < inst->n_packages; i++) {
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

static int write_generation_files(const Installer *inst, const RequirementSet *all,
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

        if (inst->language == LANGUAGE_PYTHON3) {
                r = format_lines("# The packages of this generation, as pip installed them "
                                 "(difysandbox-installer).\n",
                                 all, &text);
                if (r < 0)
                        return r;
                return write_file_at(inst->gen_path, "requirements.txt", text, reterr);
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

/* ---- running pip or npm ---- */

typedef struct ToolOutput {
        char *line; /* the line being read, TOOL_LINE_MAX + 1 bytes */
        size_t len;
        size_t n_packages;
        unsigned steps;   /* "Collecting" or "npm http fetch" lines so far */
        char *error;      /* the error line that says most about a failure */
        bool error_final; /* python: an "ERROR:" line; nodejs: the first telling "npm error" line */
        char *last_line;  /* the last line with something on it */
} ToolOutput;

static void tool_output_done(ToolOutput *out) {
        free(out->line);
        free(out->error);
        free(out->last_line);
}

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void remember(char **slot, const char *line) {
        char *copy = strdup(line);

        if (copy) { /* without memory the failure is reported without this line */
                free(*slot);
                *slot = copy;
        }
}

/* pip: the last "ERROR:" line ("No matching distribution found for ..."), else the last "error:".
 * npm: the first "npm error" (npm 10+) or "npm ERR!" line that is not a code, an errno or a log path. */
static void track_error(Installer *inst, ToolOutput *out, const char *line) {
        if (inst->language == LANGUAGE_PYTHON3) {
                if (startswith(line, "ERROR:")) {
                        remember(&out->error, line);
                        out->error_final = true;
                } else if (startswith(line, "error:") && !out->error_final)
                        remember(&out->error, line);
                return;
        }
        if (out->error_final)
                return;
        if (startswith(line, "npm error ") || startswith(line, "npm ERR! ")) {
                const char *rest = line + (line[4] == 'e' ? 10 : 9);
                static const char *const dull[] = { "code ",
                                                    "errno ",
                                                    "syscall ",
                                                    "path ",
                                                    "dest ",
                                                    "A complete log",
                                                    "Log files were not written" };
                bool telling = *rest != '\0';

                for (size_t i = 0; telling && i < ELEMENTSOF(dull); i++)
                        if (startswith(rest, dull[i]))
                                telling = false;
                if (telling) {
                        remember(&out->error, line);
                        out->error_final = true;
                } else if (!out->error)
                        remember(&out->error, line);
        }
}

static void track_progress(Installer *inst, ToolOutput *out, const char *line) {
        size_t n = out->n_packages > 0 ? out->n_packages : 1;

        if (inst->language == LANGUAGE_PYTHON3) {
                if (startswith(line, "Collecting ")) {
                        out->steps++;
                        report_progress(inst, 10 + (unsigned) (50 * out->steps / (out->steps + n)),
                                        "collecting %.200s", line + 11);
                } else if (startswith(line, "Installing collected packages:"))
                        report_progress(inst, 70, "installing");
                else if (startswith(line, "Successfully installed"))
                        report_progress(inst, 90, "installed");
                return;
        }
        if (startswith(line, "npm http fetch ")) {
                out->steps++;
                report_progress(inst, 10 + (unsigned) (60 * out->steps / (out->steps + n)), "fetching");
        } else if (startswith(line, "added ") || startswith(line, "changed ") ||
                   startswith(line, "up to date"))
                report_progress(inst, 90, "installed");
}

/* One line of the tool's output: forwarded, indented, as valid UTF-8 without control characters. */
static int tool_line(Installer *inst, ToolOutput *out) {
        _cleanup_free_ char *clean = NULL;
        size_t len = out->len, clean_len;
        int r;

        while (len > 0 && (out->line[len - 1] == '\r' || out->line[len - 1] == '\n'))
                len--;
        out->len = 0;
        r = utf8_sanitize(out->line, len, &clean, &clean_len);
        if (r < 0)
                return r;
        for (size_t i = 0; i < clean_len; i++)
                if ((unsigned char) clean[i] < 0x20 || clean[i] == 0x7f)
                        clean[i] = clean[i] == '\t' ? '\t' : ' ';
        printf("  %s\n", clean);
        if (clean_len == 0 || strspn(clean, " \t") == clean_len)
                return 0;
        remember(&out->last_line, clean);
        track_error(inst, out, clean);
        track_progress(inst, out, clean);
        return 0;
}

static int tool_input(Installer *inst, ToolOutput *out, const char *buf, size_t n) {
        int r;

        for (size_t i = 0; i < n; i++) {
                out->line[out->len++] = buf[i];
                if (buf[i] == '\n' || out->len == TOOL_LINE_MAX) {
                        r = tool_line(inst, out);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Reads what is there; returns 1 at the end of the output, 0 when more may come. */
static int tool_read(Installer *inst, ToolOutput *out, int fd) {
        char buf[16384];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return 1;
                r = tool_input(inst, out, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

/* In the forked child: its own process group (so that SIGTERM reaches all of it), stdout and stderr
 * into the pipe, no other fd, no blocked signal, in the generation's directory. */
static void tool_exec(const Installer *inst, char **argv, char **envp, int out_fd) __attribute__((noreturn));
static void tool_exec(const Installer *inst, char **argv, char **envp, int out_fd) {
        sigset_t none;
        int null_fd;

        (void) setpgid(0, 0);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (sigemptyset(&none) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                _exit(127);
        (void) signal(SIGPIPE, SIG_DFL);
        null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
            dup2(out_fd, STDERR_FILENO) < 0)
                _exit(127);
        if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
                _exit(127);
        if (chdir(inst->gen_path) < 0) {
                dprintf(STDERR_FILENO, "cannot enter %s: %m\n", inst->gen_path);
                _exit(127);
        }
        execve(argv[0], argv, envp);
        dprintf(STDERR_FILENO, "cannot execute %s: %m\n", argv[0]);
        _exit(127);
}

/* Kills the tool's process group (it is a zombie or alive, so the group ID is still its own) and reaps
 * the tool. term: SIGTERM first, SIGKILL after STOP_TIMEOUT_MSEC. */
static int tool_stop(pid_t pid, int pidfd, bool term, int *ret_status) {
        if (term) {
                (void) kill(-pid, SIGTERM);
                if (pidfd >= 0) {
                        struct pollfd p = { .fd = pidfd, .events = POLLIN };
                        (void) poll(&p, 1, STOP_TIMEOUT_MSEC); /* on error or timeout, SIGKILL */
                } else
                        for (int i = 0; i < STOP_TIMEOUT_MSEC / 50; i++) {
                                siginfo_t si = { 0 };

                                if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                                    si.si_pid == pid)
                                        break;
                                (void) usleep(50000);
                        }
        }
        (void) kill(-pid, SIGKILL); /* whatever is left of the group; ESRCH when nothing is */
        while (waitpid(pid, ret_status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

static int run_tool(Installer *inst, char **argv, char **envp, size_t n_packages, char **reterr) {
        _cleanup_(tool_output_done) ToolOutput out = { .n_packages = n_packages };
        _cleanup_close_ int pipe_r = -EBADF, pipe_w = -EBADF, pidfd = -EBADF;
        const char *tool = inst->language == LANGUAGE_PYTHON3 ? "pip" : "npm";
        bool eof = false, exited = false;
        int fds[2], status, r;
        pid_t pid;

        out.line = malloc(TOOL_LINE_MAX + 1);
        if (!out.line)
                return -ENOMEM;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return failf(reterr, -errno, "cannot make a pipe: %m");
        pipe_r = fds[0];
        pipe_w = fds[1];
        if (fcntl(pipe_r, F_SETFL, O_NONBLOCK) < 0)
                return failf(reterr, -errno, "cannot set up the pipe: %m");
        (void) fflush(stdout); /* or the child would write our buffer again */

        pid = fork();
        if (pid < 0)
                return failf(reterr, -errno, "cannot fork: %m");
        if (pid == 0)
                tool_exec(inst, argv, envp, pipe_w);
        (void) setpgid(pid, pid); /* the child does it too; whichever comes first */
        pipe_w = safe_close(pipe_w);
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0U); /* without it (Linux < 5.3), the end of output */
        if (pidfd < 0)
                pidfd = -EBADF;

        while (!exited && !(eof && pidfd < 0)) {
                struct pollfd p[3] = {
                        { .fd = eof ? -1 : pipe_r, .events = POLLIN },
                        { .fd = inst->signal_fd, .events = POLLIN },
                        { .fd = pidfd, .events = POLLIN },
                };

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        (void) tool_stop(pid, pidfd, true, &status);
                        return failf(reterr, r, "cannot wait for %s: %m", tool);
                }
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(inst->signal_fd, &si, sizeof(si)) != sizeof(si))
                                si.ssi_signo = SIGTERM;
                        printf("stopping %s: received SIG%s\n", tool,
                               sigabbrev_np((int) si.ssi_signo) ?: "?");
                        (void) tool_stop(pid, pidfd, true, &status);
                        (void) tool_read(inst, &out, pipe_r); /* its last words */
                        return failf(reterr, -EINTR, "interrupted by SIG%s",
                                     sigabbrev_np((int) si.ssi_signo) ?: "?");
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        r = tool_read(inst, &out, pipe_r);
                        if (r < 0) {
                                (void) tool_stop(pid, pidfd, true, &status);
                                return failf(reterr, r, "cannot read the output of %s: %m", tool);
                        }
                        if (r > 0)
                                eof = true;
                }
                if (p[2].revents & POLLIN)
                        exited = true;
        }
        if (!eof) /* it exited: what it wrote is in the pipe, unless a leftover of its group holds it */
                (void) tool_read(inst, &out, pipe_r);
        r = tool_stop(pid, pidfd, false, &status);
        if (r < 0)
                return failf(reterr, r, "cannot wait for %s: %m", tool);
        if (out.len > 0) {
                r = tool_line(inst, &out);
                if (r < 0)
                        return r;
        }

        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                return failf(reterr, -EPROTO, "%s failed with exit status %d: %s", tool, WEXITSTATUS(status),
                             out.error ?: out.last_line ?: "no output");
        return failf(reterr, -EPROTO, "%s was killed by SIG%s: %s", tool,
                     sigabbrev_np(WTERMSIG(status)) ?: "?", out.error ?: out.last_line ?: "no output");
}

/* Appends "NAME=value" to env for each proxy variable the installer was given. */
static size_t add_proxy_environment(char **env, size_t n) {
        static const char *const names[] = { "http_proxy", "https_proxy", "all_proxy", "no_proxy",
                                             "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const char *v = getenv(names[i]);

                if (v && asprintf(&env[n], "%s=%s", names[i], v) >= 0)
                        n++;
        }
        return n;
}

static int install(Installer *inst, const RequirementSet *all, char **reterr) {
        _cleanup_(strv_freep) char **argv = NULL, **envp = NULL;
        size_t n = 0, e = 0;
        int r;

        argv = calloc(24 + all->n, sizeof(char *));
        envp = calloc(24, sizeof(char *));
        if (!argv || !envp)
                return -ENOMEM;

        if (asprintf(&envp[e++], "PATH=" TOOL_PATH) < 0 || asprintf(&envp[e++], "LANG=C.UTF-8") < 0 ||
            asprintf(&envp[e++], "HOME=%s/" HOME_DIR, inst->gen_path) < 0 ||
            asprintf(&envp[e++], "TMPDIR=%s/" TMP_DIR, inst->gen_path) < 0)
                return -ENOMEM;
        e = add_proxy_environment(envp, e);

        if (inst->language == LANGUAGE_PYTHON3) {
                static const char *const fixed[] = { "-m",
                                                     "pip",
                                                     "install",
                                                     "--no-cache-dir",
                                                     "--disable-pip-version-check",
                                                     "--no-input",
                                                     "--progress-bar",
                                                     "off",
                                                     "--no-color" };

                /* --target skips pip's "externally managed" check (PEP 668), so no
                 * --break-system-packages: the target is ours. */
                argv[n++] = strdup(inst->python);
                for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                        argv[n++] = strdup(fixed[i]);
                argv[n++] = strdup("--target");
                if (asprintf(&argv[n++], "%s/python", inst->gen_path) < 0)
                        return -ENOMEM;
                if (inst->index_url) {
                        argv[n++] = strdup("--index-url");
                        argv[n++] = strdup(inst->index_url);
                }
                argv[n++] = strdup("-r");
                if (asprintf(&argv[n++], "%s/requirements.txt", inst->gen_path) < 0)
                        return -ENOMEM;
                if (asprintf(&envp[e++], "PYTHONNOUSERSITE=1") < 0 ||
                    asprintf(&envp[e++], "PIP_ROOT_USER_ACTION=ignore") < 0) /* tests run it as root */
                        return -ENOMEM;
        } else {
                static const char *const fixed[] = { "install",      "--no-audit",
                                                     "--no-fund",    "--no-update-notifier",
                                                     "--omit=dev",   "--loglevel=http",
                                                     "--color=false" };

                argv[n++] = strdup(inst->npm);
                for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                        argv[n++] = strdup(fixed[i]);
                argv[n++] = strdup("--prefix");
                argv[n++] = strdup(inst->gen_path);
                if (inst->registry) {
                        argv[n++] = strdup("--registry");
                        argv[n++] = strdup(inst->registry);
                }
                argv[n++] = strdup("--");
                for (size_t i = 0; i < all->n; i++)
                        argv[n++] = strdup(all->items[i].text);
                if (asprintf(&envp[e++], "npm_config_cache=%s/" NPM_CACHE_DIR, inst->gen_path) < 0 ||
                    asprintf(&envp[e++], "npm_config_update_notifier=false") < 0 ||
                    asprintf(&envp[e++], "npm_config_logs_max=0") < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (!argv[i])
                        return -ENOMEM;

        r = run_tool(inst, argv, envp, all->n, reterr);
        if (r < 0)
                return r;
        return 0;
}

/* ---- main ---- */

/* A signal that came while pip or npm was not running. */
static int check_signal(const Installer *inst, char **reterr) {
        struct signalfd_siginfo si;

        if (read(inst->signal_fd, &si, sizeof(si)) == sizeof(si))
                return failf(reterr, -EINTR, "interrupted by SIG%s",
                             sigabbrev_np((int) si.ssi_signo) ?: "?");
        return 0;
}

static int make_dir_in(const Installer *inst, const char *name, mode_t mode, char **reterr) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", inst->gen_path, name) < 0)
                return -ENOMEM;
        if (mkdir(path, mode) < 0)
                return failf(reterr, -errno, "cannot make %s: %m", path);
        return 0;
}

static int installer_run(Installer *inst, uint64_t *ret_number, char **reterr) {
        _cleanup_(requirement_set_done) RequirementSet all = { 0 }, extra = { 0 };
        const char *tool = inst->language == LANGUAGE_PYTHON3 ? "pip" : "npm";
        uint64_t number;
        sigset_t mask;
        int r;

        /* Everything that can be checked is checked before anything changes. */
        for (size_t i = 0; i < inst->n_packages; i++) {
                _cleanup_free_ char *err = NULL;

                r = requirement_check(inst->language, inst->packages[i], &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return failf(reterr, r, "package %s", err ?: "invalid");
        }
        if (inst->requirements) {
                _cleanup_(requirement_set_done) RequirementSet check = { 0 };

                r = requirements_read_file(inst->language, inst->requirements, &check, reterr);
                if (r < 0)
                        return failf(reterr, r, "cannot read %s: %m", inst->requirements);
        }

        report_progress(inst, 0, "waiting for the install lock");
        r = generation_begin(inst->packages_dir, &number, &inst->lock_fd);
        if (r < 0)
                return failf(reterr, r, "cannot begin a generation in %s: %m", inst->packages_dir);
        inst->number = number; /* from here on, a failure removes it (installer_done()) */
        if (asprintf(&inst->gen_path, "%s/.gen-%" PRIu64 ".tmp", inst->packages_dir, number) < 0)
                return -ENOMEM;

        /* From now on a stop request aborts the generation instead of leaving it to the next installer. */
        if (sigemptyset(&mask) < 0 || sigaddset(&mask, SIGTERM) < 0 || sigaddset(&mask, SIGINT) < 0 ||
            sigaddset(&mask, SIGHUP) < 0 || sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return failf(reterr, -errno, "cannot block signals: %m");
        inst->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (inst->signal_fd < 0)
                return failf(reterr, -errno, "cannot make a signalfd: %m");

        report_progress(inst, 2, "building generation %" PRIu64, number);
        r = gather_packages(inst, &all, &extra, reterr);
        if (r < 0)
                return failf(reterr, r, "cannot collect the packages: %m");
        r = write_generation_files(inst, &all, &extra, reterr);
        if (r < 0)
                return failf(reterr, r, "cannot write the files of the generation: %m");
        r = check_signal(inst, reterr);
        if (r < 0)
                return r;

        if (all.n == 0) {
                printf("no packages: generation %" PRIu64 " is empty\n", number);
                if (inst->language == LANGUAGE_PYTHON3) {
                        r = make_dir_in(inst, "python", 0755, reterr);
                        if (r < 0)
                                return r;
                }
        } else {
                printf("installing %zu package%s with %s into generation %" PRIu64 "\n", all.n,
                       all.n == 1 ? "" : "s", tool, number);
                for (size_t i = 0; i < all.n; i++)
                        printf("package %s\n", all.items[i].text);
                r = make_dir_in(inst, HOME_DIR, 0700, reterr);
                if (r < 0)
                        return r;
                r = make_dir_in(inst, TMP_DIR, 0700, reterr);
                if (r < 0)
                        return r;
                report_progress(inst, 5, "installing %zu package%s with %s", all.n, all.n == 1 ? "" : "s",
                                tool);
                r = install(inst, &all, reterr);
                if (r < 0)
                        return failf(reterr, r, "cannot run %s: %m", tool);
                r = check_signal(inst, reterr);
                if (r < 0)
                        return r;
                static const char *const scratch[] = { HOME_DIR, TMP_DIR, NPM_CACHE_DIR };
                for (size_t i = 0; i < ELEMENTSOF(scratch); i++) {
                        r = generation_remove_entry(inst->packages_dir, number, scratch[i]);
                        if (r < 0)
                                return failf(reterr, r, "cannot remove %s/%s: %m", inst->gen_path,
                                             scratch[i]);
                }
        }

        report_progress(inst, 95, "switching to generation %" PRIu64, number);
        r = generation_commit(inst->packages_dir, number);
        if (r < 0)
                return failf(reterr, r, "cannot switch to generation %" PRIu64 ": %m", number);
        inst->number = 0; /* committed: nothing to abort */

        r = generation_collect(inst->packages_dir);
        if (r < 0) /* the new generation is current all the same */
                printf("warning: cannot remove old generations of %s: %s\n", inst->packages_dir,
                       strerror(-r));
        else if (r > 0)
                printf("removed %d old generation%s\n", r, r == 1 ? "" : "s");
        report_progress(inst, 100, "generation %" PRIu64 " is current", number);
        *ret_number = number;
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(installer_done) Installer inst = INSTALLER_NULL;
        _cleanup_free_ char *err = NULL;
        uint64_t number = 0;
        int r;

        umask(022); /* runs read the generation under other UIDs */
        (void) setvbuf(stdout, NULL, _IOLBF, 0);
        (void) signal(SIGPIPE, SIG_IGN);

        r = parse_argv(argc, argv, &inst, &err);
        if (r == 0)
                return EXIT_SUCCESS;
        if (r > 0)
                r = installer_run(&inst, &number, &err);
        if (r < 0) {
                if (!err)
                        (void) failf(&err, r, "%m");
                installer_done(&inst); /* abort before the last line: the manager may act on it */
                inst = INSTALLER_NULL;
                for (char *p = err; p && *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                *p = ' '; /* one line */
                (void) log_error_errno(r, "Installing dependencies failed: %s", err ? err : "out of memory");
                printf("error: %s\n", err ? err : "out of memory");
                return EXIT_FAILURE;
        }
        printf("generation %" PRIu64 "\n", number);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
