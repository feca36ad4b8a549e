/* difysandbox: the operator's command. `run` executes one snippet through the whole sandbox and prints
 * one JSON object (difysandbox(8)). */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/serve.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/parse.h"
#include "config/config-file.h"
#include "runner/admit.h"
#include "runner/handler.h"
#include "runner/languages.h"
#include "runtime/runtime.h"
#include "sandbox/run.h"

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);
DEFINE_POINTER_CLEANUP(Sandbox *, sandbox_free);
DEFINE_POINTER_CLEANUP(Admit *, admit_free);

static void help(void) {
        printf("Usage: difysandbox [--config FILE] run --language python3|nodejs [--network]\n"
               "                       [--timeout SEC] [--memory BYTES] [--timing] [FILE|-]\n"
               "       difysandbox [--config FILE] serve --listen HOST:PORT\n"
               "       difysandbox check-config [--show-secrets] [FILE]\n"
               "       difysandbox --version\n"
               "\n"
               "run           run one Python 3 or Node.js snippet in the sandbox, print one JSON object\n"
               "serve         serve the HTTP API on HOST:PORT, one worker process per connection\n"
               "check-config  validate a configuration and print the effective values\n"
               "\n"
               "See difysandbox(8) and difysandbox.conf(5).\n");
}

/* Milliseconds with microsecond precision, printed as such rather than as a binary double's digits. */
static json_object *json_ms(uint64_t usec) {
        char text[32];
        (void) snprintf(text, sizeof(text), "%" PRIu64 ".%03" PRIu64, usec / 1000, usec % 1000);
        return json_object_new_double_s((double) usec / 1000.0, text);
}

static json_object *timing_object(const RunTiming *t) {
        const struct {
                const char *name;
                uint64_t usec;
        } phases[] = {
                { "uid", t->uid },
                { "cgroup", t->cgroup },
                { "spawn", t->spawn },
                { "attach", t->attach },
                { "root", t->root },
                { "creds_seccomp", t->creds_seccomp },
                { "interpreter", t->interpreter },
                { "first_output", t->first_output },
                { "user_code", t->user_code },
                { "cleanup", t->cleanup },
        };
        json_object *o = json_object_new_object();

        for (size_t i = 0; o && i < ELEMENTSOF(phases); i++)
                if (json_object_object_add(o, phases[i].name, json_ms(phases[i].usec)) < 0)
                        return json_object_put(o), NULL;
        return o;
}

static int print_output(const RunOutput *out, bool timing) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        if (timing && json_object_object_add(o, "timing", timing_object(&out->timing)) < 0)
                return -ENOMEM;
        if (json_object_object_add(
                    o, "stdout", json_object_new_string_len(out->stdout_text, (int) out->stdout_len)) < 0 ||
            json_object_object_add(
                    o, "stderr", json_object_new_string_len(out->stderr_text, (int) out->stderr_len)) < 0 ||
            json_object_object_add(o, "error", json_object_new_string(out->error)) < 0 ||
            json_object_object_add(o, "exit_code", json_object_new_int(out->exit_code)) < 0 ||
            json_object_object_add(o, "result", json_object_new_string(run_result_to_string(out->result))) <
                    0 ||
            json_object_object_add(o, "duration_ms", json_ms(out->duration_usec)) < 0 ||
            json_object_object_add(o, "cpu_ms", json_ms(out->cpu_usec)) < 0 ||
            json_object_object_add(o, "memory_peak", json_object_new_uint64(out->memory_peak)) < 0 ||
            json_object_object_add(o, "uid", json_object_new_int((int) out->uid)) < 0 ||
            json_object_object_add(o, "id", json_object_new_string(out->id)) < 0)
                return -ENOMEM;
        /* The calls its filters refused, named (refusals.h): what a debugging operator asks first. */
        json_object *refused = json_object_new_array();
        if (!refused || json_object_object_add(o, "refused_calls", refused) < 0)
                return -ENOMEM;
        for (unsigned i = 0; i < out->refusals.n; i++) {
                char name[64];

                refusals_name(out->refusals.calls[i].nr, name, sizeof(name));
                if (json_object_array_add(refused, json_object_new_string(name)) < 0)
                        return -ENOMEM;
        }
        if (puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
                return -EIO;
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* The runner's path without its pool: admission (max_workers, max_requests), the run and its journal
 * record. Not counted in the service's stats: a run from a shell is not Dify's. */
static int run_and_print(const Config *cfg, const RunRequest *req, bool timing) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        _cleanup_(admit_freep) Admit *admit = NULL;
        RunFailure failure = { 0 };
        HandlerResult res;
        int r;

        r = languages_sandbox_new(cfg, &sb, &failure);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the sandbox (step '%s'%s%s): %m",
                                run_step_to_string(failure.step), failure.detail ? ": " : "",
                                failure.detail ? failure.detail : "");
                run_failure_done(&failure);
                return r;
        }
        r = admit_open(cfg, &admit);
        if (r < 0)
                return log_error_errno(r, "Cannot open the admission state in '%s/admission': %m",
                                       cfg->state_dir);

        HandlerContext ctx = { .cfg = cfg, .sandbox = sb, .admit = admit };
        (void) handler_execute(&ctx, req, /* warm= */ NULL, &res);
        switch (res.status) {
        case RUNNER_STATUS_RAN:
                r = print_output(&res.out, timing);
                if (r < 0)
                        log_error_errno(r, "Cannot print the result: %m");
                break;
        case RUNNER_STATUS_BUSY:
        case RUNNER_STATUS_TIMEOUT:
                r = log_error_errno(-EBUSY,
                                    "Refused: no admission slot came free (max_requests=%" PRIu32
                                    ", max_workers=%" PRIu32 ")",
                                    cfg->max_requests, cfg->max_workers);
                break;
        case RUNNER_STATUS_FAILED: /* handler_execute() logged where */
        case RUNNER_STATUS_CONFIG:
        case _RUNNER_STATUS_MAX:
                if (res.failure.step == RUN_STEP_NETWORK)
                        log_error("network is disabled, please enable it in the configuration");
                r = res.error < 0 ? res.error : -EIO;
                break;
        }
        handler_result_done(&res);
        return r;
}

/* run's options into req; *ret_file is FILE, or "-" for standard input. Returns 1 when --help was shown
 * and nothing is to run, 0 to run, or a negative errno (logged). */
static int run_options_parse(int argc, char **argv, RunRequest *req, bool *ret_timing,
                             const char **ret_file) {
        /* clang-format off */
        static const struct option options[] = {
                { "language", required_argument, NULL, 'l' },
                { "network",  no_argument,       NULL, 'n' },
                { "timeout",  required_argument, NULL, 't' },
                { "memory",   required_argument, NULL, 'm' },
                { "timing",   no_argument,       NULL, 'T' },
                { "help",     no_argument,       NULL, 'h' },
                {},
        };
        /* clang-format on */
        Language language = _LANGUAGE_INVALID;
        bool timing = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "l:nt:m:Th", options, NULL)) >= 0)
                switch (c) {
                case 'l':
                        language = language_from_string(optarg);
                        if (language < 0) {
                                log_error("Invalid --language '%s': expected " RUNTIME_LANGUAGE_NAMES,
                                          optarg);
                                return -EINVAL;
                        }
                        break;
                case 'n':
                        req->network = true;
                        break;
                case 't':
                        r = parse_duration(optarg, &req->timeout_usec);
                        if (r < 0 || req->timeout_usec == 0)
                                return log_error_errno(
                                        r < 0 ? r : -ERANGE,
                                        "Invalid --timeout '%s': expected seconds > 0 (e.g. 5 or 2.5): %m",
                                        optarg);
                        break;
                case 'm':
                        r = parse_size(optarg, &req->memory_max);
                        if (r < 0 || req->memory_max < (16ULL << 20))
                                return log_error_errno(
                                        r < 0 ? r : -ERANGE,
                                        "Invalid --memory '%s': expected bytes >= 16M (e.g. 256M): %m",
                                        optarg);
                        break;
                case 'T':
                        timing = true;
                        break;
                case 'h':
                        help();
                        return 1;
                default:
                        return -EINVAL;
                }
        if (language < 0) {
                log_error("Missing --language: expected " RUNTIME_LANGUAGE_NAMES);
                return -EINVAL;
        }
        req->language =
                (unsigned) language; /* the sandbox's languages are the enum's (runner/languages.h) */
        if (optind + 1 < argc) {
                log_error("Unexpected argument '%s'", argv[optind + 1]);
                return -EINVAL;
        }
        *ret_timing = timing;
        *ret_file = optind < argc ? argv[optind] : "-";
        return 0;
}

/* The code to run, from file or from standard input ("-"), up to code_max bytes. */
static int read_code(const Config *cfg, const char *file, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (strcmp(file, "-") == 0)
                fd = dup(STDIN_FILENO);
        else
                fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "Cannot open '%s': %m", file);
        r = read_full_fd(fd, cfg->code_max, ret, ret_len);
        if (r == -EFBIG)
                return log_error_errno(r, "Code in '%s' is larger than code_max (%llu bytes)", file,
                                       (unsigned long long) cfg->code_max);
        if (r < 0)
                return log_error_errno(r, "Cannot read '%s': %m", file);
        return 0;
}

static int verb_run(Config *cfg, int argc, char **argv) {
        _cleanup_free_ char *code = NULL;
        RunRequest req = { .language = _LANGUAGE_INVALID };
        const char *file = "-";
        bool timing = false;
        int r;

        r = run_options_parse(argc, argv, &req, &timing, &file);
        if (r != 0)
                return r < 0 ? r : 0;
        r = read_code(cfg, file, &code, &req.code_len);
        if (r < 0)
                return r;
        req.code = code;
        return run_and_print(cfg, &req, timing);
}

static int verb_check_config(int argc, char **argv) {
        static const struct option options[] = {
                { "show-secrets", no_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool show_secrets = false;
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "sh", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        show_secrets = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        if (argc - optind > 1) {
                log_error("Unexpected argument '%s'", argv[optind + 1]);
                return -EINVAL;
        }
        /* FILE alone, or the default file and drop-ins; then the environment's overrides. */
        return config_check_main(optind < argc ? argv[optind] : NULL, show_secrets);
}

/* `serve --listen ADDR [--config FILE]`: the HTTP service where systemd is not PID 1 (DESIGN §2). */
static int verb_serve(Config *cfg, int argc, char **argv) {
        static const struct option options[] = {
                { "listen", required_argument, NULL, 'l' },
                { "config", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *listen_addr = NULL, *config_file = NULL;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "l:c:h", options, NULL)) >= 0)
                switch (c) {
                case 'l':
                        listen_addr = optarg;
                        break;
                case 'c':
                        config_file = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        if (!listen_addr) {
                log_error("Missing --listen: expected HOST:PORT, [IPV6]:PORT or :PORT, e.g. 127.0.0.1:8194");
                return -EINVAL;
        }
        if (optind < argc) {
                log_error("Unexpected argument '%s'", argv[optind]);
                return -EINVAL;
        }
        if (config_file) {
                /* serve's own --config means what the global one does: FILE alone, then the environment */
                config_done(cfg);
                r = config_setup(cfg, config_file);
                if (r < 0)
                        return r;
        }
        return serve_main(cfg, listen_addr);
}

static bool wants_help(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                        return true;
        return false;
}

int main(int argc, char **argv) {
        Config cfg;
        int r;

        /* A run that dies early closes its code pipe: that must be EPIPE, not the end of us. */
        (void) signal(SIGPIPE, SIG_IGN);

        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                help();
                return argc < 2 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (strcmp(argv[1], "--version") == 0) {
                printf("difysandbox %s\n", VERSION);
                return EXIT_SUCCESS;
        }

        const char *config_file = NULL;
        if (argc >= 3 && strcmp(argv[1], "--config") == 0) {
                config_file = argv[2];
                argc -= 2;
                argv += 2;
        }
        if (argc < 2) {
                help();
                return EXIT_FAILURE;
        }

        if (strcmp(argv[1], "check-config") == 0)
                return verb_check_config(argc - 1, argv + 1) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        if (strcmp(argv[1], "run") == 0 && geteuid() != 0 && !wants_help(argc - 1, argv + 1)) {
                /* Said first: otherwise the configuration (root's to read) or a step of the sandbox
                 * fails with a bare EPERM that names a symptom, not the cause. */
                log_error("difysandbox run must run as root: it creates namespaces and cgroups and runs the "
                          "code under a UID of its pool (try sudo)");
                return EXIT_FAILURE;
        }

        r = config_setup(&cfg, config_file);
        if (r < 0)
                return EXIT_FAILURE;

        if (strcmp(argv[1], "run") == 0)
                r = verb_run(&cfg, argc - 1, argv + 1);
        else if (strcmp(argv[1], "serve") == 0)
                r = verb_serve(&cfg, argc - 1, argv + 1);
        else {
                log_error("Unknown command '%s'; see difysandbox --help", argv[1]);
                r = -EINVAL;
        }

        config_done(&cfg);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
