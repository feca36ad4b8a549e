/* bench-seccomp-install: what installing each of the product's seccomp filters costs the kernel.
 *
 * A run meets three filters: its worker's (src/worker/worker-filter.c) and the run's two stages
 * (src/sandbox/seccomp.c, per language, with network as Dify asks). Each is installed once per process,
 * and the kernel runs every call number through a new filter then (seccomp_cache_prepare()), so the
 * cost depends on the program's shape, not only its length. This compiles the filters as the product
 * does, then forks COUNT children per filter that set no_new_privs, install it and exit, and reports
 * their CPU (getrusage of the children) minus that of children that install nothing, in rounds whose
 * order alternates. Compare builds by running each build's copy in one sitting.
 *
 * Usage: bench-seccomp-install [--count N] [--rounds R]   (defaults 1000 and 3)
 * Exit status: 0 when every install succeeded, 1 when one failed, 2 on bad arguments or a compile error. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "sandbox/seccomp.h"
#include "worker/worker-filter.h"

/* The baseline, the worker's, and each language's stages. */
#define N_FILTERS (2 + _LANGUAGE_MAX * _SECCOMP_STAGE_MAX)

typedef struct Filter {
        const char *name;
        SeccompProgram *program; /* NULL: the baseline, a child that installs nothing */
} Filter;

static double children_cpu_ms(void) {
        struct rusage u;

        (void) getrusage(RUSAGE_CHILDREN, &u);
        return (double) (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
               (double) (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

/* The mean CPU of one child, in ms, or a negative value when a child failed. */
static double install_many(const SeccompProgram *p, unsigned count) {
        double before = children_cpu_ms();

        for (unsigned i = 0; i < count; i++) {
                int status;
                pid_t pid = fork();

                if (pid < 0)
                        return -1;
                if (pid == 0) {
                        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                                _exit(3);
                        _exit(p && seccomp_install(p) < 0 ? 4 : 0);
                }
                if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        return -1;
        }
        return (children_cpu_ms() - before) / count;
}

static int parse_count(const char *s, unsigned *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *s == '\0' || *end != '\0' || v == 0 || v > 1000000)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int main(int argc, char **argv) {
        unsigned count = 1000, rounds = 3;
        Filter filters[N_FILTERS] = { { "fork, no filter", NULL } };
        size_t n = 1;
        int r;

        for (int i = 1; i < argc; i++) {
                unsigned *target = strcmp(argv[i], "--count") == 0    ? &count
                                   : strcmp(argv[i], "--rounds") == 0 ? &rounds
                                                                      : NULL;

                if (!target || i + 1 == argc || parse_count(argv[i + 1], target) < 0) {
                        fprintf(stderr,
                                "usage: %s [--count N] [--rounds R] (N and R from 1 to 1000000; bad: %s)\n",
                                argv[0], argv[i]);
                        return 2;
                }
                i++;
        }

        r = worker_filter_compile(&filters[n].program);
        filters[n++].name = "the worker's";
        for (Language l = 0; r >= 0 && l < _LANGUAGE_MAX; l++)
                for (SeccompStage s = 0; r >= 0 && s < _SECCOMP_STAGE_MAX; s++) {
                        static char names[_LANGUAGE_MAX][_SECCOMP_STAGE_MAX][48];
                        const Runtime *rt = runtime_get(l);

                        (void) snprintf(names[l][s], sizeof(names[l][s]), "%s, %s stage, network",
                                        language_to_string(l), s == SECCOMP_STAGE_EXEC ? "exec" : "final");
                        r = seccomp_compile(rt->rules, rt->n_rules, true, s, NULL, &filters[n].program);
                        filters[n++].name = names[l][s];
                }
        if (r < 0) {
                fprintf(stderr, "Cannot compile the filters: %s\n", strerror(-r));
                return 2;
        }

        printf("CPU per install, ms: a child's CPU minus the baseline's (%u children each, %u rounds)\n",
               count, rounds);
        for (unsigned round = 0; round < rounds; round++) {
                double cost[N_FILTERS];

                for (size_t k = 0; k < n; k++) {
                        size_t i = round % 2 ? n - 1 - k : k; /* alternate the order between rounds */

                        cost[i] = install_many(filters[i].program, count);
                        if (cost[i] < 0) {
                                fprintf(stderr, "Installing %s filter failed in a child.\n",
                                        filters[i].name);
                                return 1;
                        }
                }
                printf("round %u: baseline %.4f", round + 1, cost[0]);
                for (size_t i = 1; i < n; i++)
                        printf("; %s (%u instructions) %.4f", filters[i].name, filters[i].program->prog.len,
                               cost[i] - cost[0]);
                printf("\n");
        }
        for (size_t i = 1; i < n; i++)
                seccomp_program_free(filters[i].program);
        return 0;
}
