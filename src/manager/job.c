/* job: dependency jobs (DESIGN §4). A job is difysandbox-installer running in a transient service as
 * the unprivileged user difysandbox-deps, sandboxed by systemd, with its stdout and stderr on a pipe
 * the manager reads (it logs, and sends pip's or npm's lines, to the unit's journal natively). On it:
 * "progress N text" lines move Progress, "generation N" says it succeeded, every other line goes to Log. The
 * pipe's end (the installer exited, and systemd dropped the unit) ends the job: the manager sends JobRemoved
 * and removes the object. The installer switches the generation in itself, atomically, so a manager that
 * dies meanwhile loses only the job object, never a generation. */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/strv.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "manager.h"
#include "redact.h"
#include "requirements.h"
#include "runtime/runtime.h"

#define INSTALLER_PATH LIBEXECDIR "/difysandbox/difysandbox-installer"
#define INSTALLER_USER "difysandbox-deps"
#define LOG_MAX (256U * 1024U) /* bytes of Log kept; older lines are dropped first */
#define LINE_MAX_BYTES 4096U   /* a longer line is cut */
#define JOB_RUNTIME_MAX_USEC (UINT64_C(3600) * 1000000U)
#define JOB_MEMORY_MAX (UINT64_C(2) << 30)

struct Job {
        Manager *manager;
        Job *next;
        uint32_t id;
        char path[sizeof(JOB_PATH_PREFIX) + 16];
        char unit[96];
        char language[16];
        const char *kind; /* "install", "refresh", "remove" */
        const char *state;
        double progress;
        char *log;
        size_t log_len;
        char line[LINE_MAX_BYTES];
        size_t line_len;
        uint64_t generation; /* from the installer's "generation N" line; 0 until then */
        char last_error[512];
        uint64_t started_usec;
        int pipe_fd;
        sd_event_source *io;
};

static Job *job_free(Job *j) {
        if (!j)
                return NULL;
        sd_event_source_disable_unref(j->io);
        (void) safe_close(j->pipe_fd);
        free(j->log);
        free(j);
        return NULL;
}
DEFINE_POINTER_CLEANUP(Job *, job_free);

static void log_drop_head(Job *j) {
        char *cut = memchr(j->log + j->log_len / 2, '\n', j->log_len - j->log_len / 2);
        size_t keep;

        cut = cut ? cut + 1 : j->log + j->log_len / 2;
        keep = j->log_len - (size_t) (cut - j->log);
        memmove(j->log, cut, keep);
        j->log_len = keep;
        j->log[keep] = '\0';
}

static int log_append(Job *j, const char *line) {
        size_t n = strlen(line);
        char *p;

        if (j->log_len + n + 2 > LOG_MAX && j->log_len > 0)
                log_drop_head(j);
        p = realloc(j->log, j->log_len + n + 2);
        if (!p)
                return -ENOMEM;
        j->log = p;
        memcpy(j->log + j->log_len, line, n);
        j->log_len += n;
        j->log[j->log_len++] = '\n';
        j->log[j->log_len] = '\0';
        return 0;
}

/* One line of the installer's protocol (src/manager/installer-main.c). */
static void handle_line(Job *j, char *line, bool *changed_progress) {
        unsigned percent;
        uint64_t gen;
        int n = 0;

        (void) redact_url_credentials(line); /* Log is every user's to read, and so is the journal record */
        if (sscanf(line, "progress %u %n", &percent, &n) == 1 && n > 0) {
                j->progress = percent > 100 ? 1.0 : percent / 100.0;
                *changed_progress = true;
                (void) log_append(j, line + n);
                return;
        }
        if (sscanf(line, "generation %" SCNu64 "%n", &gen, &n) == 1 && line[n] == '\0' && gen > 0) {
                j->generation = gen;
                return;
        }
        if (strncmp(line, "error: ", 7) == 0)
                (void) snprintf(j->last_error, sizeof(j->last_error), "%s", line + 7);
        (void) log_append(j, line);
}

static void job_finish(Job *j) {
        Manager *m = j->manager;
        const char *result = j->generation > 0 ? "done" : "failed";
        Job **pp;

        j->state = result;
        j->progress = j->generation > 0 ? 1.0 : j->progress;
        (void) sd_bus_emit_properties_changed(m->bus, j->path, JOB_INTERFACE, "State", "Progress", "Log",
                                              NULL);

        if (j->generation > 0) {
                (void) sd_journal_send(
                        "MESSAGE=Dependency job %" PRIu32 " (%s %s) done: generation %" PRIu64 " is current",
                        j->id, j->kind, j->language, j->generation, "MESSAGE_ID=" MESSAGE_JOB_FINISHED_STR,
                        "PRIORITY=%i", LOG_INFO, "DIFYSANDBOX_JOB=%" PRIu32, j->id,
                        "DIFYSANDBOX_JOB_KIND=%s", j->kind, "LANGUAGE=%s", j->language, "RESULT=done",
                        "DIFYSANDBOX_GENERATION=%" PRIu64, j->generation, "DURATION_USEC=%" PRIu64,
                        now(CLOCK_MONOTONIC) - j->started_usec, NULL);
                (void) manager_emit_dependencies_changed(m, j->language, j->generation);
        } else {
                const char *why =
                        j->last_error[0] ? j->last_error : "the installer ended without a generation";

                (void) sd_journal_send(
                        "MESSAGE=Dependency job %" PRIu32 " (%s %s) failed, the current "
                        "generation stays: %s",
                        j->id, j->kind, j->language, why, "MESSAGE_ID=" MESSAGE_JOB_FINISHED_STR,
                        "PRIORITY=%i", LOG_ERR, "DIFYSANDBOX_JOB=%" PRIu32, j->id, "DIFYSANDBOX_JOB_KIND=%s",
                        j->kind, "LANGUAGE=%s", j->language, "RESULT=failed", "DIFYSANDBOX_REASON=%s", why,
                        "DURATION_USEC=%" PRIu64, now(CLOCK_MONOTONIC) - j->started_usec, NULL);
        }

        (void) sd_bus_emit_signal(m->bus, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, "JobRemoved", "os",
                                  j->path, result);
        (void) sd_bus_emit_object_removed(m->bus, j->path);
        for (pp = &m->jobs; *pp; pp = &(*pp)->next)
                if (*pp == j) {
                        *pp = j->next;
                        break;
                }
        job_free(j);
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Job *j = userdata;
        char buf[8192];
        bool progress = false, log_changed = false;
        ssize_t n;

        n = read(fd, buf, sizeof(buf));
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                log_warning_errno(-errno, "Cannot read the output of dependency job %" PRIu32 ": %m", j->id);
                n = 0;
        }
        if (n == 0) {
                if (j->line_len > 0) {
                        j->line[j->line_len] = '\0';
                        handle_line(j, j->line, &progress);
                        j->line_len = 0;
                }
                job_finish(j);
                return 0;
        }
        for (ssize_t i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                        j->line[j->line_len] = '\0';
                        handle_line(j, j->line, &progress);
                        j->line_len = 0;
                        log_changed = true;
                } else if (j->line_len < sizeof(j->line) - 1)
                        j->line[j->line_len++] = buf[i];
        }
        if (log_changed || progress)
                (void) sd_bus_emit_properties_changed(j->manager->bus, j->path, JOB_INTERFACE, "Progress",
                                                      "Log", NULL);
        return 0;
}

/* ---- starting the installer ---- */

static int append_strv(sd_bus_message *m, char **v) {
        int r = sd_bus_message_open_container(m, 'a', "s");

        for (; r >= 0 && v && *v; v++)
                r = sd_bus_message_append(m, "s", *v);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* A new list holding copies of head's n items, then of tail's items. */
static int argv_dup(const char *const *head, size_t n, char **tail, char ***ret) {
        _cleanup_(strv_freep) char **argv = NULL;
        size_t k = 0;

        argv = calloc(n + strv_length(tail) + 1, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                argv[k] = strdup(head[i]);
                if (!argv[k++])
                        return -ENOMEM;
        }
        for (char **p = tail; p && *p; p++) {
                argv[k] = strdup(*p);
                if (!argv[k++])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(argv);
        return 0;
}

/* The package tool's part of the installer's command line: the requirements file it keeps and the tool.
 * *npm_path is freed by the caller. */
static int installer_tool_args(const Config *cfg, const Runtime *rt, const char **args, size_t *n,
                               char **npm_path) {
        const char *interpreter = runtime_interpreter(rt, cfg), *slash;

        switch (rt->package_tool) {
        case PACKAGE_TOOL_PIP:
                args[(*n)++] = "--requirements";
                args[(*n)++] = cfg->python_requirements;
                args[(*n)++] = "--python";
                args[(*n)++] = interpreter;
                return 0; /* the index: in the settings (installer_settings_open()) */
        case PACKAGE_TOOL_NPM:
                /* npm lives beside node, as Debian and NodeSource install them */
                slash = strrchr(interpreter, '/');
                if (asprintf(npm_path, "%.*s/npm", (int) (slash - interpreter), interpreter) < 0) {
                        *npm_path = NULL;
                        return -ENOMEM;
                }
                args[(*n)++] = "--requirements";
                args[(*n)++] = cfg->nodejs_packages;
                args[(*n)++] = "--npm";
                args[(*n)++] = *npm_path;
                return 0; /* the registry: in the settings (installer_settings_open()) */
        case _PACKAGE_TOOL_MAX:
                break;
        }
        return -EINVAL;
}

/* The installer's command line: everything it needs comes from here, never from the configuration
 * file, which holds the API key and is not the installer user's to read. */
static int installer_argv(const Config *cfg, const char *language, const char *packages_dir, bool remove,
                          char **packages, char ***ret) {
        _cleanup_free_ char *npm = NULL;
        const char *args[16]; /* at most 12: 6 common, 4 of the language, --remove and -- */
        const Runtime *rt = runtime_get(language_from_string(language));
        size_t n = 0;
        int r;

        if (!rt)
                return -EINVAL; /* job_start() refused it already */
        args[n++] = INSTALLER_PATH;
        args[n++] = "--language";
        args[n++] = rt->name;
        args[n++] = "--packages-dir";
        args[n++] = packages_dir;
        r = installer_tool_args(cfg, rt, args, &n, &npm);
        if (r < 0)
                return r;
        args[n++] = "--settings-on-stdin";
        if (remove)
                args[n++] = "--remove";
        args[n++] = "--";
        assert(n <= ELEMENTSOF(args));
        return argv_dup(args, n, packages, ret);
}

static int env_add(char **env, size_t *n, const char *name, const char *value) {
        char *s;

        if (asprintf(&s, "%s=%s", name, value) < 0)
                return -ENOMEM;
        env[(*n)++] = s;
        return 0;
}

/* The installer's environment; it passes nothing else of its own on to pip and npm. No proxy here: the
 * unit's Environment= is every local user's to read (systemctl show), and a proxy URL may hold a
 * password. The proxies come with the settings (installer_settings_open()). */
static int installer_environment(const char *packages_dir, char ***ret) {
        _cleanup_(strv_freep) char **env = NULL;
        size_t n = 0;
        int r;

        env = calloc(4, sizeof(char *)); /* 3, and the NULL */
        if (!env)
                return -ENOMEM;
        r = env_add(env, &n, "HOME", packages_dir);
        if (r < 0)
                return r;
        r = env_add(env, &n, "LC_ALL", "C.UTF-8");
        if (r < 0)
                return r;
        r = env_add(env, &n, "PATH", "/usr/local/bin:/usr/bin:/bin");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

/* What may hold a password (python_pip_mirror_url, npm_registry, proxy.http, proxy.https: a URL's
 * USER:PASSWORD@), as the installer reads it on stdin (--settings-on-stdin): never on its command line,
 * in its unit's environment or in any property of the unit, which every local user reads. A sealed
 * memfd, read from its start, handed to the unit as StandardInputFileDescriptor=: only the installer's
 * user and root can open /proc/PID/fd/0. Returns the fd or a negative errno. */
static int installer_settings_open(const Config *cfg, const Runtime *rt) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len = 0;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        if (rt->package_tool == PACKAGE_TOOL_PIP && cfg->python_pip_mirror_url[0])
                fprintf(f, "index-url=%s\n", cfg->python_pip_mirror_url);
        if (rt->package_tool == PACKAGE_TOOL_NPM && cfg->npm_registry[0])
                fprintf(f, "registry=%s\n", cfg->npm_registry);
        if (cfg->proxy_http[0])
                fprintf(f, "http-proxy=%s\n", cfg->proxy_http);
        if (cfg->proxy_https[0])
                fprintf(f, "https-proxy=%s\n", cfg->proxy_https);
        if (fclose(f) != 0)
                return -ENOMEM;
        fd = memfd_create("difysandbox-installer-settings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        if (len > 0 && write(fd, text, len) != (ssize_t) len)
                return errno > 0 ? -errno : -EIO;
        explicit_bzero(text, len);
        if (lseek(fd, 0, SEEK_SET) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* The sandbox of the installer: it runs code from a package index (setup.py, npm scripts), so it gets
 * its own user, no capabilities, a read-only system but for its packages directory, private /tmp and
 * /dev, and the network (it downloads). */
static int append_sandbox_properties(sd_bus_message *call, const Job *j, const char *packages_dir, int in_fd,
                                     int out_fd) {
        _cleanup_free_ char *description = NULL;
        int r;

        if (asprintf(&description, "difysandbox dependency job %" PRIu32 " (%s %s)", j->id, j->kind,
                     j->language) < 0)
                return -ENOMEM;
        r = sd_bus_message_append(
                call,
                "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                "Description", "s", description, "Type", "s", "exec", "Slice", "s", "difysandbox.slice",
                "User", "s", INSTALLER_USER, "Group", "s", INSTALLER_USER, "WorkingDirectory", "s",
                packages_dir, "StandardInputFileDescriptor", "h", in_fd, "StandardOutputFileDescriptor", "h",
                out_fd, "StandardErrorFileDescriptor", "h", out_fd, "CollectMode", "s", "inactive-or-failed",
                "RuntimeMaxUSec", "t", JOB_RUNTIME_MAX_USEC, "MemoryMax", "t", JOB_MEMORY_MAX, "UMask", "u",
                (uint32_t) 0022, "NoNewPrivileges", "b", 1, "CapabilityBoundingSet", "t", UINT64_C(0),
                "ProtectSystem", "s", "strict", "ProtectHome", "s", "yes", "PrivateTmp", "b", 1,
                "PrivateDevices", "b", 1, "ProtectKernelTunables", "b", 1, "ProtectKernelModules", "b", 1,
                "ProtectControlGroups", "b", 1);
        if (r < 0)
                return r;
        return sd_bus_message_append(call, "(sv)(sv)(sv)(sv)(sv)", "RestrictSUIDSGID", "b", 1,
                                     "LockPersonality", "b", 1, "RestrictRealtime", "b", 1,
                                     "ProtectKernelLogs", "b", 1, "ProtectClock", "b", 1);
}

/* ExecStart=argv, as the one (path, argv, ignore-failure=false) of a(sasb). */
static int append_exec_start(sd_bus_message *call, char **argv) {
        int r;

        r = sd_bus_message_open_container(call, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", "ExecStart");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'v', "a(sasb)");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'a', "(sasb)");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'r', "sasb");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", argv[0]);
        if (r < 0)
                return r;
        r = append_strv(call, argv);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "b", 0);
        if (r < 0)
                return r;
        for (int i = 0; i < 4; i++) {
                r = sd_bus_message_close_container(call);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A property of type as: ReadWritePaths, Environment, SystemCallArchitectures. */
static int append_string_list(sd_bus_message *call, const char *name, char **value) {
        int r;

        r = sd_bus_message_open_container(call, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", name);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'v', "as");
        if (r < 0)
                return r;
        r = append_strv(call, value);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(call);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(call);
}

static int start_unit(Job *j, char **argv, const char *packages_dir, int out_fd, sd_bus_error *reterr) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(strv_freep) char **env = NULL;
        _cleanup_close_ int settings_fd = -EBADF;
        char *rw[] = { (char *) packages_dir, NULL };
        char *arch[] = { "native", NULL };
        sd_bus *bus = j->manager->bus;
        const Runtime *rt = runtime_get(language_from_string(j->language));
        int r;

        if (!rt)
                return -EINVAL; /* job_start() refused it already */
        r = installer_environment(packages_dir, &env);
        if (r < 0)
                return r;
        settings_fd = installer_settings_open(&j->manager->cfg, rt);
        if (settings_fd < 0)
                return settings_fd;
        r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.systemd1",
                                           "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "ss", j->unit, "fail");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(call, 'a', "(sv)");
        if (r < 0)
                return r;
        r = append_sandbox_properties(call, j, packages_dir, settings_fd, out_fd);
        if (r < 0)
                return r;
        r = append_exec_start(call, argv);
        if (r < 0)
                return r;
        r = append_string_list(call, "ReadWritePaths", rw);
        if (r < 0)
                return r;
        r = append_string_list(call, "Environment", env);
        if (r < 0)
                return r;
        r = append_string_list(call, "SystemCallArchitectures", arch);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "(sv)", "RestrictAddressFamilies", "(bas)", 1, 3, "AF_UNIX",
                                  "AF_INET", "AF_INET6");
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(call);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        return sd_bus_call(bus, call, 0, reterr, &reply);
}

/* The last job ID handed out, kept where the next manager of this boot finds it, so that a restarted
 * manager never hands out an ID that journal records (DIFYSANDBOX_JOB=) already name. */
#define JOB_ID_FILE CONFIG_FILE_PUBLISHED_DIR "/last-job-id"

static int job_id_save(uint32_t id) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (mkdir(CONFIG_FILE_PUBLISHED_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (asprintf(&tmp, "%s.%d.tmp", JOB_ID_FILE, (int) getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        if (dprintf(fd, "%" PRIu32 "\n", id) < 0 || fsync(fd) < 0 || rename(tmp, JOB_ID_FILE) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

/* The next job ID: one past the last of this manager, or of the managers before it in this boot. */
static uint32_t job_id_next(Manager *m) {
        int r;

        if (m->next_job_id == 0) {
                _cleanup_free_ char *text = NULL;
                uint32_t last = 0;

                r = read_full_file(JOB_ID_FILE, 64, &text, NULL);
                if (r >= 0) {
                        text[strcspn(text, "\n")] = '\0';
                        r = parse_uint32(text, &last);
                }
                if (r < 0 && r != -ENOENT)
                        log_warning_errno(r, "Cannot read the last job ID from %s, counting from 1: %m",
                                          JOB_ID_FILE);
                m->next_job_id = last;
        }
        if (++m->next_job_id == 0) /* after 2^32 - 1 jobs */
                m->next_job_id = 1;
        r = job_id_save(m->next_job_id);
        if (r < 0) /* this manager still counts on; only one that restarts might repeat an ID */
                log_warning_errno(r, "Cannot save the last job ID in %s, ignoring: %m", JOB_ID_FILE);
        return m->next_job_id;
}

static Job *job_find_language(Manager *m, const char *language) {
        for (Job *j = m->jobs; j; j = j->next)
                if (streq(j->language, language))
                        return j;
        return NULL;
}

/* Every package must be one the installer would accept: a requirement to install, a name to remove. */
static int check_packages(Language language, const char *kind, char **packages, sd_bus_error *reterr) {
        int r;

        for (char **p = packages; p && *p; p++) {
                _cleanup_free_ char *why = NULL;

                r = streq(kind, "remove") ? requirement_name_parse(language, *p, NULL, &why)
                                          : requirement_check(language, *p, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return sd_bus_error_setf(reterr, SD_BUS_ERROR_INVALID_ARGS, "Package refused: %s",
                                                 why ? why : strerror(-r));
        }
        return 0;
}

static int job_new(Manager *m, const char *language, const char *kind, Job **ret) {
        Job *j;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->manager = m;
        j->pipe_fd = -EBADF;
        j->id = job_id_next(m);
        j->kind = kind;
        j->state = "running";
        j->started_usec = now(CLOCK_MONOTONIC);
        (void) snprintf(j->language, sizeof(j->language), "%s", language);
        (void) snprintf(j->path, sizeof(j->path), JOB_PATH_PREFIX "/%" PRIu32, j->id);
        /* The start time keeps unit names unique across manager restarts. */
        (void) snprintf(j->unit, sizeof(j->unit), "difysandbox-deps-%s-%" PRIu64 "-%" PRIu32 ".service",
                        language, now(CLOCK_REALTIME) / 1000000U, j->id);
        *ret = j;
        return 0;
}

/* Logged here with the unit's name; the caller gets systemd's own error from StartTransientUnit, or ours
 * when the call did not get that far. */
static int start_unit_failed(const Job *j, int r, sd_bus_error *reterr) {
        if (sd_bus_error_is_set(reterr))
                return log_error_errno(r, "Cannot start the installer unit %s: %s", j->unit,
                                       reterr->message);
        log_error_errno(r, "Cannot start the installer unit %s: %m", j->unit);
        return manager_error_set_failedf(reterr, r, "Cannot start the installer unit: %m");
}

int job_start(Manager *m, const char *language, const char *kind, char **packages, const char **ret_path,
              sd_bus_error *reterr) {
        _cleanup_(strv_freep) char **argv = NULL;
        _cleanup_free_ char *packages_dir = NULL;
        _cleanup_close_ int read_fd = -EBADF, write_fd = -EBADF;
        _cleanup_(job_freep) Job *j = NULL;
        int fds[2], r;
        Job *running;

        r = manager_language_check(language, reterr);
        if (r < 0)
                return r;
        r = check_packages(language_from_string(language), kind, packages, reterr);
        if (r < 0)
                return r;
        running = job_find_language(m, language);
        if (running)
                return sd_bus_error_setf(reterr, MANAGER_ERROR_JOB_RUNNING,
                                         "A %s dependency job is already running: %s (job %" PRIu32 ", %s)",
                                         language, running->path, running->id, running->kind);

        if (asprintf(&packages_dir, "%s/%s/packages", m->cfg.runtime_dir, language) < 0)
                return -ENOMEM;
        r = installer_argv(&m->cfg, language, packages_dir, streq(kind, "remove"), packages, &argv);
        if (r < 0)
                return r;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        read_fd = fds[0];
        write_fd = fds[1];
        if (fcntl(read_fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;

        r = job_new(m, language, kind, &j);
        if (r < 0)
                return r;
        r = start_unit(j, argv, packages_dir, write_fd, reterr);
        if (r < 0)
                return start_unit_failed(j, r, reterr);
        write_fd = safe_close(write_fd); /* systemd holds the installer's end now */

        r = sd_event_add_io(m->event, &j->io, read_fd, EPOLLIN, on_output, j);
        if (r < 0)
                return r;
        j->pipe_fd = TAKE_FD(read_fd);
        j->next = m->jobs;
        m->jobs = j; /* before the signal: ObjectAdded reads the job's properties through m->jobs */
        (void) sd_bus_emit_object_added(m->bus, j->path);
        (void) sd_journal_send("MESSAGE=Dependency job %" PRIu32 " (%s %s) started in %s", j->id, kind,
                               language, j->unit, "PRIORITY=%i", LOG_INFO, "DIFYSANDBOX_JOB=%" PRIu32, j->id,
                               "DIFYSANDBOX_JOB_KIND=%s", kind, "LANGUAGE=%s", language, "UNIT_NAME=%s",
                               j->unit, NULL);
        *ret_path = TAKE_PTR(j)->path;
        return 0;
}

void jobs_free(Manager *m) {
        while (m->jobs) {
                Job *j = m->jobs;
                m->jobs = j->next;
                job_free(j);
        }
}

int manager_append_jobs(Manager *m, sd_bus_message *reply) {
        int r = sd_bus_message_open_container(reply, 'a', "(oss)");

        for (Job *j = m->jobs; r >= 0 && j; j = j->next)
                r = sd_bus_message_append(reply, "(oss)", j->path, j->language, j->kind);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

/* ---- the job objects ---- */

static int job_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error) {
        Manager *m = userdata;

        for (Job *j = m->jobs; j; j = j->next)
                if (streq(j->path, path)) {
                        *found = j;
                        return 1;
                }
        return 0;
}

static int job_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes,
                         sd_bus_error *error) {
        _cleanup_(strv_freep) char **v = NULL;
        Manager *m = userdata;
        size_t n = 0;

        for (Job *j = m->jobs; j; j = j->next)
                n++;
        v = calloc(n + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        n = 0;
        for (Job *j = m->jobs; j; j = j->next) {
                v[n] = strdup(j->path);
                if (!v[n++])
                        return -ENOMEM;
        }
        *nodes = TAKE_PTR(v);
        return 0;
}

static int property_get_log(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", j->log ? j->log : "");
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", j->state);
}

static int property_get_language(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", j->language);
}

static int property_get_kind(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Job *j = userdata;

        return sd_bus_message_append(reply, "s", j->kind);
}

static const sd_bus_vtable job_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "u", NULL, offsetof(Job, id), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Language", "s", property_get_language, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Kind", "s", property_get_kind, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Progress", "d", NULL, offsetof(Job, progress), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Log", "s", property_get_log, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_VTABLE_END,
};

int job_register_vtable(Manager *m) {
        int r;

        r = sd_bus_add_fallback_vtable(m->bus, NULL, JOB_PATH_PREFIX, JOB_INTERFACE, job_vtable, job_find,
                                       m);
        if (r < 0)
                return r;
        return sd_bus_add_node_enumerator(m->bus, NULL, JOB_PATH_PREFIX, job_enumerate, m);
}
