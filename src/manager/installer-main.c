/* difysandbox-installer: builds one dependency generation of a language (DESIGN §4, generation.h) with
 * pip or npm, as the unprivileged user that owns the packages directory. The manager starts it in a
 * sandboxed transient unit; everything it needs comes from its command line (the config file holds the
 * API key and is not readable by this user).
 *
 *   difysandbox-installer --language python3|nodejs --packages-dir DIR [--requirements FILE]
 *           [--index-url URL] [--registry URL] [--python PATH] [--npm PATH] [--settings-on-stdin]
 *           [--remove] [--] [PACKAGE...]
 *   difysandbox-installer --version
 *
 * The new generation's packages are the requirement file's, then those an operator added earlier with
 * InstallDependencies (the current generation's extra-packages.txt), then the PACKAGE arguments; a later
 * one replaces an earlier one of the same name. With --remove (RemoveDependencies) the PACKAGE arguments
 * are names taken out of those added earlier instead. An empty set makes an empty generation.
 *
 * Protocol on stdout, one line at a time, for the manager:
 *   progress <0-100> <text>   an estimate, never decreasing
 *   generation <N>            the last line on success (exit status 0): gen-<N> is current
 *   error: <reason>           the last line on failure (exit status 1): current is untouched
 * Every other line is log. The lines of pip and npm are forwarded indented by two spaces, so none of
 * them can pass for a protocol line. SIGTERM, SIGINT or SIGHUP kill pip or npm (their process group)
 * and abort the generation.
 *
 * --settings-on-stdin: the settings that may hold a password come on stdin, one "NAME=VALUE" a line
 * (index-url, registry, http-proxy, https-proxy), never on the command line or in the unit's environment,
 * which every local user reads (systemctl show, /proc/PID/cmdline). The manager hands them over so, in a
 * sealed memfd. The installer passes them to pip and npm in their environment (PIP_INDEX_URL,
 * npm_config_registry, the proxy variables), which only their user and root read.
 *
 * This file is the command line, the protocol and the order of the steps; installer.h lists the other
 * parts. */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/generation.h"
#include "common/log.h"
#include "manager/installer.h"
#include "manager/redact.h"
#include "manager/requirements.h"

#define URL_MAX 2048U
#define DEFAULT_PYTHON "/usr/bin/python3"
#define DEFAULT_NPM "/usr/bin/npm"

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
        inst->index_url = inst->registry = NULL; /* they may point into the settings */
        free(TAKE_PTR(inst->settings));
}

int failf(char **reterr, int r, const char *format, ...) {
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

void report_progress(Installer *inst, unsigned percent, const char *format, ...) {
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
               "  --language LANGUAGE      " RUNTIME_LANGUAGE_NAMES "\n"
               "  --packages-dir DIR       the language's packages directory (absolute)\n"
               "  --requirements FILE      the requirement file; a missing file is empty\n"
               "  --index-url URL          python3: pip's package index\n"
               "  --registry URL           nodejs: npm's registry\n"
               "  --settings-on-stdin      index-url=, registry=, http-proxy=, https-proxy= lines on stdin\n"
               "  --python PATH            the interpreter that runs pip (" DEFAULT_PYTHON ")\n"
               "  --npm PATH               npm (" DEFAULT_NPM ")\n"
               "  --remove                 take the PACKAGE names out of those added earlier\n"
               "  -h --help                show this help\n"
               "     --version             show the version\n",
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

#define SETTINGS_MAX (4U * URL_MAX + 64U)

/* One "NAME=VALUE" line of the settings: the index and the registry for the tool's command, the proxies
 * into this process's environment, whence add_proxy_environment() hands them to the tool. */
static int setting_apply(Installer *inst, char *line, char **reterr) {
        char *value = strchr(line, '=');

        if (!value)
                return failf(reterr, -EINVAL, "a line of the settings on stdin has no '='");
        *value++ = '\0';
        if (streq(line, "index-url"))
                inst->index_url = value;
        else if (streq(line, "registry"))
                inst->registry = value;
        else if (streq(line, "http-proxy")) {
                if (setenv("HTTP_PROXY", value, 1) < 0 || setenv("http_proxy", value, 1) < 0)
                        return failf(reterr, -errno, "cannot set the proxy: %m");
        } else if (streq(line, "https-proxy")) {
                if (setenv("HTTPS_PROXY", value, 1) < 0 || setenv("https_proxy", value, 1) < 0)
                        return failf(reterr, -errno, "cannot set the proxy: %m");
        } else
                return failf(reterr, -EINVAL, "unknown setting '%s' on stdin", line);
        return 0;
}

/* --settings-on-stdin: reads them all (at most SETTINGS_MAX bytes) into inst->settings, which the
 * pointers set here point into. */
static int settings_read(Installer *inst, char **reterr) {
        size_t len = 0;
        char *line, *next;
        int r;

        inst->settings = calloc(1, SETTINGS_MAX + 1);
        if (!inst->settings)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(STDIN_FILENO, inst->settings + len, SETTINGS_MAX - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return failf(reterr, -errno, "cannot read the settings on stdin: %m");
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == SETTINGS_MAX)
                        return failf(reterr, -E2BIG, "the settings on stdin exceed %u bytes", SETTINGS_MAX);
        }
        if (memchr(inst->settings, '\0', len))
                return failf(reterr, -EINVAL, "the settings on stdin hold a NUL byte");
        for (line = inst->settings; *line; line = next) {
                next = strchrnul(line, '\n');
                if (*next)
                        *next++ = '\0';
                if (!*line)
                        continue;
                r = setting_apply(inst, line, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* What the options say together: 1 when they make sense, else a negative errno with *reterr. */
static int check_arguments(Installer *inst, char **reterr) {
        if (inst->settings_on_stdin) { /* they are checked with the command line's */
                int r = settings_read(inst, reterr);
                if (r < 0)
                        return r;
        }
        if (inst->language < 0)
                return failf(reterr, -EINVAL, "--language is required");
        if (!inst->packages_dir || inst->packages_dir[0] != '/')
                return failf(reterr, -EINVAL, "--packages-dir with an absolute path is required");
        if (inst->requirements && inst->requirements[0] != '/')
                return failf(reterr, -EINVAL, "--requirements needs an absolute path");
        switch (runtime_get(inst->language)->package_tool) { /* each option is its tool's */
        case PACKAGE_TOOL_PIP:
                if (inst->registry)
                        return failf(reterr, -EINVAL, "--registry applies to nodejs only");
                break;
        case PACKAGE_TOOL_NPM:
                if (inst->index_url)
                        return failf(reterr, -EINVAL, "--index-url applies to python3 only");
                break;
        case _PACKAGE_TOOL_MAX:
                break;
        }
        if (inst->index_url && !url_is_valid(inst->index_url))
                return failf(reterr, -EINVAL, "--index-url '%s' is not an http:// or https:// URL",
                             inst->index_url);
        if (inst->registry && !url_is_valid(inst->registry))
                return failf(reterr, -EINVAL, "--registry '%s' is not an http:// or https:// URL",
                             inst->registry);
        if (inst->python[0] != '/' || inst->npm[0] != '/')
                return failf(reterr, -EINVAL, "--python and --npm need absolute paths");

        if (inst->remove && inst->n_packages == 0)
                return failf(reterr, -EINVAL, "--remove needs at least one PACKAGE name");
        return 1;
}

/* Returns 1 to go on, 0 after --help or --version, or a negative errno with *reterr. */
static int parse_argv(int argc, char *argv[], Installer *inst, char **reterr) {
        enum {
                ARG_LANGUAGE = 0x100,
                ARG_PACKAGES_DIR,
                ARG_REQUIREMENTS,
                ARG_INDEX_URL,
                ARG_REGISTRY,
                ARG_PYTHON,
                ARG_NPM,
                ARG_REMOVE,
                ARG_SETTINGS_ON_STDIN,
                ARG_VERSION
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
                { "remove", no_argument, NULL, ARG_REMOVE },
                { "settings-on-stdin", no_argument, NULL, ARG_SETTINGS_ON_STDIN },
                { "version", no_argument, NULL, ARG_VERSION },
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
                                return failf(reterr, -EINVAL,
                                             "unknown language '%s' (" RUNTIME_LANGUAGE_NAMES ")", optarg);
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
                case ARG_REMOVE:
                case ARG_SETTINGS_ON_STDIN: /* flags */
                        *(c == ARG_REMOVE ? &inst->remove : &inst->settings_on_stdin) = true;
                        break;
                case ARG_VERSION:
                        printf("difysandbox-installer %s\n", VERSION);
                        return 0;
                case '?':
                        return failf(reterr, -EINVAL, "option '%s' is unknown or lacks its argument",
                                     argv[optind - 1]);
                default:
                        return failf(reterr, -EINVAL, "cannot parse the command line");
                }

        inst->packages = argv + optind;
        inst->n_packages = (size_t) (argc - optind);
        return check_arguments(inst, reterr);
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

/* An empty generation still has pip's --target directory, which the python3 bootstrap puts on sys.path;
 * npm's node_modules is looked up only when it exists. */
static int make_empty_packages_dir(const Installer *inst, char **reterr) {
        const Runtime *rt = runtime_get(inst->language);

        switch (rt->package_tool) {
        case PACKAGE_TOOL_PIP:
                return make_dir_in(inst, rt->packages_subdir, 0755, reterr);
        case PACKAGE_TOOL_NPM:
        case _PACKAGE_TOOL_MAX:
                break;
        }
        return 0;
}

/* npm is a package of its own on Debian, and often missing where node is installed: say so and how to
 * get it, rather than pass on exec's bare "No such file or directory". */
static int check_tool(const Installer *inst, char **reterr) {
        const Runtime *rt = runtime_get(inst->language);
        const char *tool = installer_tool_path(inst);

        if (access(tool, X_OK) >= 0)
                return 0;
        switch (rt->package_tool) {
        case PACKAGE_TOOL_NPM:
                return failf(
                        reterr, -errno,
                        "npm is not installed (%s: %m): install it (apt install npm), or set %s to a node "
                        "with npm beside it",
                        tool, rt->interpreter_key);
        case PACKAGE_TOOL_PIP:
        case _PACKAGE_TOOL_MAX:
                break;
        }
        return failf(reterr, -errno, "cannot run %s: %m: set %s to an installed %s", tool,
                     rt->interpreter_key, rt->name);
}

/* pip or npm on the whole package set, in the generation being built, and then its scratch space gone. */
static int install_all(Installer *inst, const RequirementSet *all, char **reterr) {
        const char *tool = runtime_get(inst->language)->package_tool_name;
        static const char *const scratch[] = { HOME_DIR, TMP_DIR, NPM_CACHE_DIR };
        int r;

        if (inst->remove)
                printf("removing %zu package%s: reinstalling the other %zu with %s\n", inst->n_packages,
                       inst->n_packages == 1 ? "" : "s", all->n, tool);
        printf("installing %zu package%s with %s into generation %" PRIu64 "\n", all->n,
               all->n == 1 ? "" : "s", tool, inst->number);
        for (size_t i = 0; i < all->n; i++)
                printf("package %s\n", all->items[i].text);
        r = check_tool(inst, reterr);
        if (r < 0)
                return r;
        r = make_dir_in(inst, HOME_DIR, 0700, reterr);
        if (r < 0)
                return r;
        r = make_dir_in(inst, TMP_DIR, 0700, reterr);
        if (r < 0)
                return r;
        report_progress(inst, 5, "installing %zu package%s with %s", all->n, all->n == 1 ? "" : "s", tool);
        r = installer_install(inst, all, reterr);
        if (r < 0)
                return failf(reterr, r, "cannot run %s: %m", tool);
        r = check_signal(inst, reterr);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(scratch); i++) {
                r = generation_remove_entry(inst->packages_dir, inst->number, scratch[i]);
                if (r < 0)
                        return failf(reterr, r, "cannot remove %s/%s: %m", inst->gen_path, scratch[i]);
        }
        return 0;
}

static int installer_run(Installer *inst, uint64_t *ret_number, char **reterr) {
        _cleanup_(requirement_set_done) RequirementSet all = { 0 }, extra = { 0 };
        uint64_t number;
        sigset_t mask;
        int r;

        /* Everything that can be checked is checked before anything changes. */
        for (size_t i = 0; i < inst->n_packages; i++) {
                _cleanup_free_ char *err = NULL;

                r = inst->remove ? requirement_name_parse(inst->language, inst->packages[i], NULL, &err)
                                 : requirement_check(inst->language, inst->packages[i], &err);
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
        r = installer_gather_packages(inst, &all, &extra, reterr);
        if (r < 0)
                return failf(reterr, r, "cannot collect the packages: %m");
        r = installer_write_generation_files(inst, &all, &extra, reterr);
        if (r < 0)
                return failf(reterr, r, "cannot write the files of the generation: %m");
        r = check_signal(inst, reterr);
        if (r < 0)
                return r;

        if (all.n == 0) {
                printf("no packages: generation %" PRIu64 " is empty\n", number);
                r = make_empty_packages_dir(inst, reterr);
                if (r < 0)
                        return r;
        } else {
                r = install_all(inst, &all, reterr);
                if (r < 0)
                        return r;
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
        /* Started by the manager as a unit (systemd sets INVOCATION_ID), with stdout and stderr on the
         * manager's pipe: systemd ignores StandardError=journal once stdout is a passed fd. Its records
         * and pip's lines go to the journal natively, where `journalctl -u` finds them by the unit. */
        if (getenv("INVOCATION_ID"))
                log_set_target_journal();
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
                if (err)
                        (void) redact_url_credentials(err); /* "--index-url 'URL' is not ..." */
                (void) log_error_errno(r, "Installing dependencies failed: %s", err ? err : "out of memory");
                printf("error: %s\n", err ? err : "out of memory");
                return EXIT_FAILURE;
        }
        printf("generation %" PRIu64 "\n", number);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
