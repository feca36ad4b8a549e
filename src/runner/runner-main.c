/* difysandbox-runner: the privileged, long-lived side of the data plane (DESIGN §2). systemd starts it
 * from difysandbox-runner.socket (a SOCK_SEQPACKET socket under /run/difysandbox, Accept=no), and it
 * serves every worker's runs until it is stopped (src/runner/runner.c). */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <systemd/sd-daemon.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "config/config-file.h"
#include "runner/runner.h"

DEFINE_POINTER_CLEANUP(Runner *, runner_free);

static void help(void) {
        printf("Usage: difysandbox-runner [--config FILE]\n"
               "\n"
               "Makes and runs the sandboxes of difysandbox's workers, on the SOCK_SEQPACKET socket "
               "systemd\n"
               "passes (difysandbox-runner.socket). Not for interactive use; see difysandbox-runner(8).\n");
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        _cleanup_(runner_freep) Runner *runner = NULL;
        _cleanup_free_ Config *cfg = NULL;
        const char *config_file = NULL;
        int c, n, r;

        /* A run that dies early closes its code pipe: that must be EPIPE, not the end of us. */
        (void) signal(SIGPIPE, SIG_IGN);

        while ((c = getopt_long(argc, argv, "c:hV", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        config_file = optarg;
                        break;
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case 'V':
                        printf("difysandbox-runner %s\n", VERSION);
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }
        if (optind < argc) {
                log_error("Unexpected argument '%s'", argv[optind]);
                return EXIT_FAILURE;
        }

        n = sd_listen_fds(/* unset_environment= */ true);
        if (n < 0) {
                log_error_errno(n, "Cannot read the sockets systemd passed: %m");
                return EXIT_FAILURE;
        }
        if (n != 1 ||
            sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, /* listening= */ 1, NULL, 0) <= 0) {
                log_error("Expected one listening AF_UNIX SOCK_SEQPACKET socket from systemd, got %d "
                          "(start me from difysandbox-runner.socket)",
                          n);
                return EXIT_FAILURE;
        }

        cfg = calloc(1, sizeof(*cfg));
        if (!cfg)
                return EXIT_FAILURE;
        r = config_setup(cfg, config_file); /* logs why it fails */
        if (r < 0)
                return EXIT_FAILURE;
        r = runner_new(TAKE_PTR(cfg), /* reloadable= */ !config_file, &runner);
        if (r < 0)
                return EXIT_FAILURE;
        r = runner_add_listener(runner, SD_LISTEN_FDS_START);
        if (r < 0) {
                log_error_errno(r, "Cannot watch the runner socket: %m");
                return EXIT_FAILURE;
        }
        r = runner_run(runner);
        if (r < 0) {
                log_error_errno(r, "The runner's event loop failed: %m");
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
