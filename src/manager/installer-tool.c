/* installer-tool: runs pip or npm for the installer (see installer.h). The tool runs in its own process
 * group, with stdout and stderr on one pipe and nothing else open; one poll loop reads that pipe, the
 * signalfd and the tool's pidfd. Each line it writes is forwarded indented by two spaces (and sent to the
 * journal, with SYSLOG_IDENTIFIER=pip or npm, when the installer logs there), as valid UTF-8
 * without control characters, and read for progress and for the error that best explains a failure. A
 * stop request kills the whole group: SIGTERM, then SIGKILL after STOP_TIMEOUT_MSEC. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/utf8.h"
#include "manager/installer.h"
#include "manager/redact.h"
#include "manager/requirements.h"

/* A line of pip or npm output longer than this is forwarded in pieces. */
#define TOOL_LINE_MAX 4096U
/* How long pip or npm get to go after SIGTERM before SIGKILL. */
#define STOP_TIMEOUT_MSEC 5000

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
static void track_error_pip(ToolOutput *out, const char *line) {
        if (startswith(line, "ERROR:")) {
                remember(&out->error, line);
                out->error_final = true;
        } else if (startswith(line, "error:") && !out->error_final)
                remember(&out->error, line);
}

static void track_error_npm(ToolOutput *out, const char *line) {
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

static void track_progress_pip(Installer *inst, ToolOutput *out, const char *line) {
        size_t n = out->n_packages > 0 ? out->n_packages : 1;

        if (startswith(line, "Collecting ")) {
                out->steps++;
                report_progress(inst, 10 + (unsigned) (50 * out->steps / (out->steps + n)),
                                "collecting %.200s", line + 11);
        } else if (startswith(line, "Installing collected packages:"))
                report_progress(inst, 70, "installing");
        else if (startswith(line, "Successfully installed"))
                report_progress(inst, 90, "installed");
}

static void track_progress_npm(Installer *inst, ToolOutput *out, const char *line) {
        size_t n = out->n_packages > 0 ? out->n_packages : 1;

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
        (void) redact_url_credentials(clean); /* an index or proxy URL's password, should a tool print it */
        printf("  %s\n", clean);
        if (log_use_journal()) /* the job's unit's journal keeps the whole output, Log only its tail */
                (void) sd_journal_send("MESSAGE=%s", clean, "PRIORITY=%i", LOG_INFO, "SYSLOG_IDENTIFIER=%s",
                                       runtime_get(inst->language)->package_tool_name, NULL);
        if (clean_len == 0 || strspn(clean, " \t") == clean_len)
                return 0;
        remember(&out->last_line, clean);
        switch (runtime_get(inst->language)->package_tool) {
        case PACKAGE_TOOL_PIP:
                track_error_pip(out, clean);
                track_progress_pip(inst, out, clean);
                break;
        case PACKAGE_TOOL_NPM:
                track_error_npm(out, clean);
                track_progress_npm(inst, out, clean);
                break;
        case _PACKAGE_TOOL_MAX:
                break;
        }
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

/* Starts the tool in a process group of its own, its output on a pipe; returns the pipe's read end,
 * its pid and a pidfd (-EBADF where Linux < 5.3 has none: then the end of output ends the wait). */
static int tool_spawn(Installer *inst, char **argv, char **envp, int *ret_pipe, pid_t *ret_pid,
                      int *ret_pidfd, char **reterr) {
        _cleanup_close_ int pipe_r = -EBADF, pipe_w = -EBADF;
        int fds[2], pidfd;
        pid_t pid;

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

        *ret_pipe = TAKE_FD(pipe_r);
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}

/* A signal to the installer stops the tool: it is told, and keeps the tool's last words. */
static int tool_interrupted(Installer *inst, ToolOutput *out, const char *tool, pid_t pid, int pidfd,
                            int pipe_r, char **reterr) {
        struct signalfd_siginfo si;
        int status;

        if (read(inst->signal_fd, &si, sizeof(si)) != sizeof(si))
                si.ssi_signo = SIGTERM;
        printf("stopping %s: received SIG%s\n", tool, sigabbrev_np((int) si.ssi_signo) ?: "?");
        (void) tool_stop(pid, pidfd, true, &status);
        (void) tool_read(inst, out, pipe_r); /* its last words */
        return failf(reterr, -EINTR, "interrupted by SIG%s", sigabbrev_np((int) si.ssi_signo) ?: "?");
}

/* Relays the tool's output until it exits (or, without a pidfd, until its output ends). On failure the
 * tool is stopped. */
static int tool_follow(Installer *inst, ToolOutput *out, const char *tool, pid_t pid, int pidfd, int pipe_r,
                       char **reterr) {
        bool eof = false, exited = false;
        int status, r;

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
                if (p[1].revents & POLLIN)
                        return tool_interrupted(inst, out, tool, pid, pidfd, pipe_r, reterr);
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        r = tool_read(inst, out, pipe_r);
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
                (void) tool_read(inst, out, pipe_r);
        return 0;
}

static int tool_verdict(const char *tool, int status, const ToolOutput *out, char **reterr) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                return failf(reterr, -EPROTO, "%s failed with exit status %d: %s", tool, WEXITSTATUS(status),
                             out->error ?: out->last_line ?: "no output");
        return failf(reterr, -EPROTO, "%s was killed by SIG%s: %s", tool, sigabbrev_np(WTERMSIG(status)) ?: "?",
                     out->error ?: out->last_line ?: "no output");
}

static int run_tool(Installer *inst, char **argv, char **envp, size_t n_packages, char **reterr) {
        _cleanup_(tool_output_done) ToolOutput out = { .n_packages = n_packages };
        _cleanup_close_ int pipe_r = -EBADF, pidfd = -EBADF;
        const char *tool = runtime_get(inst->language)->package_tool_name;
        int status, r;
        pid_t pid = 0;

        out.line = malloc(TOOL_LINE_MAX + 1);
        if (!out.line)
                return -ENOMEM;
        r = tool_spawn(inst, argv, envp, &pipe_r, &pid, &pidfd, reterr);
        if (r < 0)
                return r;
        r = tool_follow(inst, &out, tool, pid, pidfd, pipe_r, reterr);
        if (r < 0)
                return r;
        r = tool_stop(pid, pidfd, false, &status);
        if (r < 0)
                return failf(reterr, r, "cannot wait for %s: %m", tool);
        if (out.len > 0) {
                r = tool_line(inst, &out);
                if (r < 0)
                        return r;
        }
        return tool_verdict(tool, status, &out, reterr);
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

const char *installer_tool_path(const Installer *inst) {
        switch (runtime_get(inst->language)->package_tool) {
        case PACKAGE_TOOL_PIP:
                return inst->python;
        case PACKAGE_TOOL_NPM:
                return inst->npm;
        case _PACKAGE_TOOL_MAX:
                break;
        }
        return NULL;
}

/* pip installs what requirements.txt lists (installer-packages.c wrote it) into the generation's
 * subfolder; its fixed arguments (rt->install_args) come first. */
static int pip_command(const Installer *inst, const Runtime *rt, char **argv, size_t *n, char **envp,
                       size_t e) {
        argv[(*n)++] = strdup("--target");
        if (asprintf(&argv[(*n)++], "%s/%s", inst->gen_path, rt->packages_subdir) < 0)
                return -ENOMEM;
        argv[(*n)++] = strdup("-r");
        if (asprintf(&argv[(*n)++], "%s/requirements.txt", inst->gen_path) < 0)
                return -ENOMEM;
        /* The index in pip's environment, not on its command line, which every user reads in /proc: its URL
         * may hold a password. */
        if (inst->index_url && asprintf(&envp[e++], "PIP_INDEX_URL=%s", inst->index_url) < 0)
                return -ENOMEM;
        if (asprintf(&envp[e++], "PYTHONNOUSERSITE=1") < 0 ||
            asprintf(&envp[e++], "PIP_ROOT_USER_ACTION=ignore") < 0) /* tests run it as root */
                return -ENOMEM;
        return 0;
}

/* npm installs the packages, named as arguments, under the generation (node_modules/, package.json). */
static int npm_command(const Installer *inst, const RequirementSet *all, char **argv, size_t *n, char **envp,
                       size_t e) {
        argv[(*n)++] = strdup("--prefix");
        argv[(*n)++] = strdup(inst->gen_path);
        argv[(*n)++] = strdup("--");
        for (size_t i = 0; i < all->n; i++)
                argv[(*n)++] = strdup(all->items[i].text);
        /* As pip's index: in the environment, which only this user and root read. */
        if (inst->registry && asprintf(&envp[e++], "npm_config_registry=%s", inst->registry) < 0)
                return -ENOMEM;
        if (asprintf(&envp[e++], "npm_config_cache=%s/" NPM_CACHE_DIR, inst->gen_path) < 0 ||
            asprintf(&envp[e++], "npm_config_update_notifier=false") < 0 ||
            asprintf(&envp[e++], "npm_config_logs_max=0") < 0)
                return -ENOMEM;
        return 0;
}

int installer_install(Installer *inst, const RequirementSet *all, char **reterr) {
        const Runtime *rt = runtime_get(inst->language);
        _cleanup_(strv_freep) char **argv = NULL, **envp = NULL;
        size_t n = 0, e = 0;
        int r;

        for (const char *const *a = rt->install_args; *a; a++)
                n++;
        argv = calloc(16 + n + all->n, sizeof(char *)); /* the tool, its arguments, ours, the packages */
        envp = calloc(24, sizeof(char *));
        if (!argv || !envp)
                return -ENOMEM;
        n = 0;

        if (asprintf(&envp[e++], "PATH=" TOOL_PATH) < 0 || asprintf(&envp[e++], "LANG=C.UTF-8") < 0 ||
            asprintf(&envp[e++], "HOME=%s/" HOME_DIR, inst->gen_path) < 0 ||
            asprintf(&envp[e++], "TMPDIR=%s/" TMP_DIR, inst->gen_path) < 0)
                return -ENOMEM;
        e = add_proxy_environment(envp, e);

        argv[n++] = strdup(installer_tool_path(inst));
        for (const char *const *a = rt->install_args; *a; a++)
                argv[n++] = strdup(*a);
        r = -EINVAL;
        switch (rt->package_tool) {
        case PACKAGE_TOOL_PIP:
                r = pip_command(inst, rt, argv, &n, envp, e);
                break;
        case PACKAGE_TOOL_NPM:
                r = npm_command(inst, all, argv, &n, envp, e);
                break;
        case _PACKAGE_TOOL_MAX:
                break;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (!argv[i])
                        return -ENOMEM;
        r = run_tool(inst, argv, envp, all->n, reterr);
        if (r < 0)
                return r;
        return 0;
}
