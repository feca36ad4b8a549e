/* difysandbox-worker: the service of one connection of difysandbox.socket (Accept=yes). systemd hands
 * it the accepted socket on fd 0 (StandardInput=socket), or as the one passed fd (LISTEN_FDS=1); it
 * serves that connection's requests in turn (src/worker/http.c) and exits when the connection ends. It
 * runs unprivileged (difysandbox@.service: User=difysandbox-worker, no capabilities): every run is asked
 * of difysandbox-runner (src/worker/runner-client.h). */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/parse.h"
#include "config/config-file.h"
#include "worker/connslot.h"
#include "worker/http.h"
#include "worker/runner-client.h"
#include "worker/worker-filter.h"

/* Where difysandbox-runner.socket listens (runner_socket's default, difysandbox.conf(5)). */
#define RUNNER_SOCKET_DEFAULT "/run/difysandbox/runner.sock"
/* MaxConnections= of units/difysandbox.socket, which --max-connections repeats. */
#define MAX_CONNECTIONS_DEFAULT 512U
#define MAX_CONNECTIONS_LIMIT 65536U

static void help(void) {
        printf("Usage: difysandbox-worker [--config FILE] [--runner-socket PATH] [--max-connections N]\n"
               "\n"
               "Serves one HTTP connection of difysandbox.socket (Accept=yes): the connection is fd 0\n"
               "(StandardInput=socket) or the one socket passed with LISTEN_FDS. Runs are asked of\n"
               "difysandbox-runner on PATH (default " RUNNER_SOCKET_DEFAULT "), which also gives the\n"
               "configuration unless --config names one. N is the socket's MaxConnections= (default %u):\n"
               "from three quarters of it on, idle unauthenticated connections make room for new ones.\n"
               "Not for interactive use.\n",
               MAX_CONNECTIONS_DEFAULT);
}

static bool same_file(int a, int b) {
        struct stat sa, sb;

        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Takes the connection out of the standard fds: HTTP must never mix with stdio, and fd 0 and 1 may be
 * the same socket, which would then stay open after libmicrohttpd closes its fd. Returns a close-on-exec
 * fd of the connection; fds 0–2 that were the socket become /dev/null. */
static int connection_take(int *ret_fd) {
        _cleanup_close_ int conn_fd = -EBADF, null_fd = -EBADF;
        int source = STDIN_FILENO, n;

        n = sd_listen_fds(/* unset_environment= */ true);
        if (n < 0)
                return n;
        if (n > 1)
                return -E2BIG;
        if (n == 1)
                source = SD_LISTEN_FDS_START;

        n = sd_is_socket(source, AF_UNSPEC, SOCK_STREAM, /* listening= */ 0);
        if (n < 0)
                return n;
        if (n == 0)
                return -ENOTSOCK;

        conn_fd = fcntl(source, F_DUPFD_CLOEXEC, 3);
        if (conn_fd < 0)
                return -errno;
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
                if ((fd == source || same_file(fd, conn_fd)) && dup2(null_fd, fd) < 0)
                        return -errno;
        if (source >= 3)
                (void) close(source);

        *ret_fd = TAKE_FD(conn_fd);
        return 0;
}

DEFINE_POINTER_CLEANUP(RunnerClient *, runner_client_free);

/* The configuration: FILE alone with --config (read by this process), else the one the runner uses,
 * which this unprivileged process could not read itself (it holds app.key). On failure *reterr_message
 * (malloc()ed, or NULL without memory) is what the client is told. */
static int worker_config(const char *config_file, const char *runner_socket, Config *cfg,
                         RunnerClient **ret_runner, uint64_t *ret_generation, char **reterr_message) {
        _cleanup_(runner_client_freep) RunnerClient *runner = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        if (config_file) {
                r = config_setup(cfg, config_file); /* logs why it fails */
                if (r < 0) {
                        if (asprintf(reterr_message,
                                     "difysandbox-worker cannot load its configuration file %s",
                                     config_file) < 0)
                                *reterr_message = NULL;
                        return r;
                }
                r = runner_client_new(runner_socket ? runner_socket : cfg->runner_socket, -EBADF,
                                      ret_runner);
                if (r < 0) {
                        config_done(cfg);
                        return log_error_errno(r, "Out of memory");
                }
                *ret_generation = 0;
                return 0;
        }
        r = runner_client_new(runner_socket ? runner_socket : RUNNER_SOCKET_DEFAULT, -EBADF, &runner);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = config_init_defaults(cfg);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        r = runner_client_fetch_config(runner, cfg, ret_generation, &why);
        if (r < 0) {
                config_done(cfg);
                if (why) {
                        if (asprintf(reterr_message,
                                     "the configuration of difysandbox-runner at %s is refused: %s",
                                     runner_client_socket_path(runner), why) < 0)
                                *reterr_message = NULL;
                        return log_error_errno(r, "The runner's configuration is refused: %s", why);
                }
                if (asprintf(reterr_message, "cannot reach difysandbox-runner at %s: %s",
                             runner_client_socket_path(runner), strerror(-r)) < 0)
                        *reterr_message = NULL;
                return log_error_errno(r, "Cannot get the configuration from the runner at '%s': %m",
                                       runner_client_socket_path(runner));
        }
        *ret_runner = TAKE_PTR(runner);
        return 0;
}

DEFINE_POINTER_CLEANUP(ConnSlot *, connslot_release);

static int max_connections_parse(const char *s, unsigned *ret) {
        uint64_t n;

        if (parse_uint64(s, &n) < 0 || n == 0 || n > MAX_CONNECTIONS_LIMIT)
                return log_error_errno(-EINVAL,
                                       "Invalid --max-connections '%s': a number from 1 to %u, the "
                                       "MaxConnections= of difysandbox.socket",
                                       s, MAX_CONNECTIONS_LIMIT);
        *ret = (unsigned) n;
        return 0;
}

/* Without its configuration the worker has nothing to serve, but the client is still owed an answer:
 * its request gets a 503 that names the cause (not a silent close), under the worker's filter. */
static int refuse(int fd, const char *message) {
        Config limits;
        int r;

        if (config_init_defaults(&limits) < 0) {
                (void) close(fd);
                return EXIT_FAILURE;
        }
        r = worker_filter_apply();
        if (r < 0) {
                log_error_errno(r, "Cannot load the worker's system call filter: %m");
                (void) close(fd);
        } else
                (void) http_serve_refusal(&limits,
                                          message ? message : "difysandbox-worker cannot set itself up", fd);
        config_done(&limits);
        return EXIT_FAILURE;
}

/* Takes the connection's slot and limits, then loads the filter: from here on it reads what a client
 * sends. Returns 0 (with *ret_slot, or NULL: the worker serves without one), or a negative errno, logged:
 * it must not serve then. */
static int worker_confine(Config *cfg, unsigned max_connections, ConnSlot **ret_slot) {
        int r;

        /* What it holds of app.key is a digest; of the index's and the proxies' URLs, nothing: it uses
         * neither (the runner's configuration comes so already; a --config file's does not). */
        r = config_scrub_for_worker(cfg);
        if (r < 0)
                return log_error_errno(r, "Cannot make the digest of app.key: %m");

        /* Its place among the host's connections, before the filter takes O_CREAT and every lock away. */
        r = connslot_take(cfg->state_dir, max_connections, ret_slot);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot count the live connections in %s/connections, so idle "
                                  "unauthenticated ones cannot be asked to make room: %m",
                                  cfg->state_dir);
        r = worker_file_size_limit(cfg->code_max); /* a backstop to the filter (worker-filter.h) */
        if (r < 0)
                return log_error_errno(r, "Cannot limit the size of the files the worker writes: %m");
        r = worker_filter_apply();
        if (r < 0)
                return log_error_errno(r, "Cannot load the worker's system call filter: %m");
        return 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "runner-socket", required_argument, NULL, 'r' },
                { "max-connections", required_argument, NULL, 'm' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        _cleanup_(runner_client_freep) RunnerClient *runner = NULL;
        _cleanup_(connslot_releasep) ConnSlot *slot = NULL;
        _cleanup_free_ char *refusal = NULL;
        const char *config_file = NULL, *runner_socket = NULL;
        unsigned max_connections = MAX_CONNECTIONS_DEFAULT;
        uint64_t generation = 0;
        Config cfg;
        int c, fd = -EBADF, r;

        http_note_process_start();
        /* A runner that goes away mid-request is EPIPE, not the end of us. */
        (void) signal(SIGPIPE, SIG_IGN);

        while ((c = getopt_long(argc, argv, "c:r:m:hV", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        config_file = optarg;
                        break;
                case 'r':
                        runner_socket = optarg;
                        break;
                case 'm':
                        if (max_connections_parse(optarg, &max_connections) < 0)
                                return EXIT_FAILURE;
                        break;
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case 'V':
                        printf("difysandbox-worker %s\n", VERSION);
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }
        if (optind < argc) {
                log_error("Unexpected argument '%s'", argv[optind]);
                return EXIT_FAILURE;
        }

        r = connection_take(&fd);
        if (r < 0) {
                log_error_errno(
                        r, "No connection on fd 0 or in LISTEN_FDS (start me from difysandbox.socket): %m");
                return EXIT_FAILURE;
        }

        r = worker_config(config_file, runner_socket, &cfg, &runner, &generation, &refusal);
        if (r < 0)
                return refuse(fd, refusal);

        r = worker_confine(&cfg, max_connections, &slot);
        if (r < 0) {
                config_done(&cfg);
                (void) close(fd);
                return EXIT_FAILURE;
        }

        r = http_serve_connection(&cfg, generation, !config_file, runner, slot, fd);
        config_done(&cfg);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
