/* test-result: src/sandbox/result.c. The wait statuses are real ones, from children that exit or die of
 * a signal, so the test does not depend on how glibc encodes them. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/cleanup.h"
#include "sandbox/result.h"

extern char **environ;

/* The status of a child that called _exit(code). */
static int status_exited(int code) {
        int status;
        pid_t pid;

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(code);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return status;
}

/* The status of a process killed by sig, sent by this process. The child execs sleep(1) first, so the
 * signal meets a plain process with default actions (not cmocka's handlers, nor valgrind's when the
 * memcheck variant runs); EOF on the close-on-exec pipe says the exec happened. */
static int status_signaled(int sig) {
        int status, ready[2];
        pid_t pid;
        char c;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit no_core = { 0, 0 };
                char *argv[] = { (char *) "sleep", (char *) "10", NULL };

                (void) setrlimit(RLIMIT_CORE, &no_core); /* SIGSYS and SIGSEGV dump core by default */
                (void) execve("/bin/sleep", argv, environ);
                _exit(EXIT_FAILURE);
        }
        (void) close(ready[1]);
        assert_int_equal(read(ready[0], &c, 1), 0);
        (void) close(ready[0]);
        assert_int_equal(kill(pid, sig), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sig);
        return status;
}

static void test_classify_exit(void **state) {
        RunFacts f = { .wait_status = status_exited(0) };

        assert_int_equal(result_classify(&f), RUN_RESULT_OK);
        assert_int_equal(result_exit_code(&f), 0);

        f = (RunFacts){ .wait_status = status_exited(3) };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);
        assert_int_equal(result_exit_code(&f), 3);

        f = (RunFacts){ .wait_status = status_exited(255) };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);
        assert_int_equal(result_exit_code(&f), 255);
}

static void test_classify_signals(void **state) {
        RunFacts f;

        /* A seccomp kill: SIGSYS, and no OOM kill in the cgroup. */
        f = (RunFacts){ .wait_status = status_signaled(SIGSYS) };
        assert_int_equal(result_classify(&f), RUN_RESULT_SECCOMP);
        assert_int_equal(result_exit_code(&f), 128 + SIGSYS);

        /* A SIGKILL we know nothing about is a plain error, not a timeout or an OOM kill. */
        f = (RunFacts){ .wait_status = status_signaled(SIGKILL) };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);
        assert_int_equal(result_exit_code(&f), 137);

        f = (RunFacts){ .wait_status = status_signaled(SIGSEGV) };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);
        assert_int_equal(result_exit_code(&f), 128 + SIGSEGV);
}

static void test_classify_sandbox_facts(void **state) {
        int killed = status_signaled(SIGKILL);
        RunFacts f;

        f = (RunFacts){ .wait_status = killed, .timed_out = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);
        assert_int_equal(result_exit_code(&f), 137);

        f = (RunFacts){ .wait_status = killed, .oom_kills = 1 };
        assert_int_equal(result_classify(&f), RUN_RESULT_MEMORY);
        assert_int_equal(result_exit_code(&f), 137);

        /* In a systemd scope the cgroup is gone before it can be read: a SIGKILL nobody else explains
         * is the OOM killer's; any other death is not. */
        f = (RunFacts){ .wait_status = killed, .oom_unobservable = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_MEMORY);
        f = (RunFacts){ .wait_status = killed, .oom_unobservable = true, .cpu_limit_hit = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);
        f = (RunFacts){ .wait_status = status_exited(1), .oom_unobservable = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);
        f = (RunFacts){ .wait_status = killed };
        assert_int_equal(result_classify(&f), RUN_RESULT_ERROR);

        f = (RunFacts){ .wait_status = killed, .output_truncated = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_OUTPUT_TRUNCATED);
        f = (RunFacts){ .wait_status = status_exited(0), .output_truncated = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_OUTPUT_TRUNCATED);

        /* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one; both are a timeout. */
        f = (RunFacts){ .wait_status = status_signaled(SIGXCPU), .cpu_limit_hit = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);
        f = (RunFacts){ .wait_status = killed, .cpu_limit_hit = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);
}

static void test_classify_precedence(void **state) {
        int killed = status_signaled(SIGKILL), sigsys = status_signaled(SIGSYS);
        RunFacts f;

        /* The deadline passed and the cgroup also saw an OOM kill: the timeout wins. */
        f = (RunFacts){ .wait_status = killed, .timed_out = true, .oom_kills = 1 };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);

        /* SIGSYS is a seccomp kill only when nothing else explains the death. */
        f = (RunFacts){ .wait_status = sigsys, .oom_kills = 0 };
        assert_int_equal(result_classify(&f), RUN_RESULT_SECCOMP);
        f = (RunFacts){ .wait_status = sigsys, .timed_out = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);

        /* The cgroup counted an OOM kill, and the CPU time used also reached RLIMIT_CPU (reclaim at
         * the memory limit burns CPU on a slow machine): the count is evidence, the CPU time is not. */
        f = (RunFacts){ .wait_status = killed, .cpu_limit_hit = true, .oom_kills = 1 };
        assert_int_equal(result_classify(&f), RUN_RESULT_MEMORY);

        /* A program that exits 0 after the deadline passed still timed out. */
        f = (RunFacts){ .wait_status = status_exited(0), .timed_out = true };
        assert_int_equal(result_classify(&f), RUN_RESULT_TIMEOUT);
}

static void test_format_error(void **state) {
        char *s;

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_OK, 0, 0, "", &s), 0);
        assert_string_equal(s, "");
        free(s);

        /* stderr output alone is not an error (DESIGN §1) */
        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_OK, 0, 0, "DeprecationWarning: x\n", &s), 0);
        assert_string_equal(s, "");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_ERROR, 3, 0, "boom\n", &s), 0);
        assert_string_equal(s, "process exited with code 3\nboom\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_TIMEOUT, 137, 0, "", &s), 0);
        assert_string_equal(s, "process exited with code 137\nerror: timeout\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_TIMEOUT, 137, 0, NULL, &s), 0);
        assert_string_equal(s, "process exited with code 137\nerror: timeout\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_MEMORY, 137, 0, "", &s), 0);
        assert_string_equal(s, "process exited with code 137\nerror: memory limit exceeded\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_SECCOMP, 159, 0, "", &s), 0);
        assert_string_equal(s, "process exited with code 159\nerror: operation not permitted\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_SECCOMP, 159, 0, "Traceback\n", &s), 0);
        assert_string_equal(s, "process exited with code 159\nerror: operation not permitted\nTraceback\n");
        free(s);

        s = NULL;
        assert_int_equal(result_format_error(RUN_RESULT_OUTPUT_TRUNCATED, 137, 0, "", &s), 0);
        assert_string_equal(s, "process exited with code 137\nerror: output limit exceeded\n");
        free(s);
}

static void test_format_error_signal(void **state) {
        _cleanup_free_ char *s = NULL, *t = NULL, *u = NULL;

        /* A SIGKILL from outside the run: what it was, not a timeout. */
        assert_int_equal(result_format_error(RUN_RESULT_ERROR, 137, SIGKILL, "", &s), 0);
        assert_string_equal(s, "process exited with code 137\nerror: killed by signal 9\n");
        /* An exit status that merely looks like one is not a signal. */
        assert_int_equal(result_format_error(RUN_RESULT_ERROR, 137, 0, "", &t), 0);
        assert_string_equal(t, "process exited with code 137\n");
        /* The sandbox's own kills keep their line. */
        assert_int_equal(result_format_error(RUN_RESULT_TIMEOUT, 137, SIGKILL, "", &u), 0);
        assert_string_equal(u, "process exited with code 137\nerror: timeout\n");
}

static void test_format_error_invalid(void **state) {
        char *sentinel = (char *) "untouched", *s = sentinel;

        assert_int_equal(result_format_error(_RUN_RESULT_MAX, 1, 0, "", &s), -EINVAL);
        assert_ptr_equal(s, sentinel);
        assert_int_equal(result_format_error(_RUN_RESULT_INVALID, 1, 0, "", &s), -EINVAL);
        assert_ptr_equal(s, sentinel);
}

static void test_result_string_round_trip(void **state) {
        static const char *const names[_RUN_RESULT_MAX] = {
                [RUN_RESULT_OK] = "ok",           [RUN_RESULT_ERROR] = "error",
                [RUN_RESULT_TIMEOUT] = "timeout", [RUN_RESULT_MEMORY] = "memory",
                [RUN_RESULT_SECCOMP] = "seccomp", [RUN_RESULT_OUTPUT_TRUNCATED] = "output-truncated",
        };

        for (RunResult r = 0; r < _RUN_RESULT_MAX; r++) {
                const char *s = run_result_to_string(r);

                assert_non_null(s);
                assert_string_equal(s, names[r]); /* these strings are the journal's RESULT= field */
                assert_int_equal(run_result_from_string(s), r);
                /* distinct from every other value */
                for (RunResult o = 0; o < r; o++)
                        assert_string_not_equal(s, run_result_to_string(o));
        }

        assert_null(run_result_to_string(_RUN_RESULT_MAX));
        assert_null(run_result_to_string(_RUN_RESULT_INVALID));
        assert_null(run_result_to_string((RunResult) 1000));

        assert_int_equal(run_result_from_string(NULL), -EINVAL);
        assert_int_equal(run_result_from_string(""), -EINVAL);
        assert_int_equal(run_result_from_string("junk"), -EINVAL);
        assert_int_equal(run_result_from_string("OK"), -EINVAL);
        assert_int_equal(run_result_from_string("ok "), -EINVAL);
        assert_int_equal(run_result_from_string("time"), -EINVAL);
        assert_int_equal(run_result_from_string("output_truncated"), -EINVAL);
}

/* The steps' names are what operators and tests match ("sandbox failed at step 'clocks'"): each step has
 * one, no two share one, and the names said before RunStep existed are unchanged. */
static void test_step_names(void **state) {
        static const struct {
                RunStep step;
                const char *name;
        } known[] = {
                { RUN_STEP_UNKNOWN, "unknown" },
                { RUN_STEP_RUNNER, "runner" },
                { RUN_STEP_REQUEST, "request" },
                { RUN_STEP_CONFIG, "config" },
                { RUN_STEP_ADMISSION, "admission" },
                { RUN_STEP_INIT, "init" },
                { RUN_STEP_INSTANCE, "instance" },
                { RUN_STEP_CGROUP, "cgroup" },
                { RUN_STEP_SCOPE, "scope" },
                { RUN_STEP_RUNTIME, "runtime" },
                { RUN_STEP_PACKAGES, "packages" },
                { RUN_STEP_UID, "uid" },
                { RUN_STEP_EGRESS, "egress" },
                { RUN_STEP_PIPES, "pipes" },
                { RUN_STEP_SPAWN, "spawn" },
                { RUN_STEP_PREPARED, "prepared" },
                { RUN_STEP_PUMP, "pump" },
                { RUN_STEP_CHILD, "child" },
                { RUN_STEP_ENTER, "enter" },
                { RUN_STEP_RESULT, "result" },
                { RUN_STEP_SYNC, "sync" },
                { RUN_STEP_CLOCKS, "clocks" },
                { RUN_STEP_ROOTFS, "rootfs" },
                { RUN_STEP_HOSTNAME, "hostname" },
                { RUN_STEP_NETWORK, "network" },
                { RUN_STEP_CGROUPNS, "cgroupns" },
                { RUN_STEP_FDS, "fds" },
                { RUN_STEP_RLIMITS, "rlimits" },
                { RUN_STEP_CREDS, "credentials" },
                { RUN_STEP_SIGNALS, "signals" },
                { RUN_STEP_SECCOMP, "seccomp" },
                { RUN_STEP_EXEC, "exec" },
        };

        for (RunStep s = 0; s < _RUN_STEP_MAX; s++) {
                const char *name = run_step_to_string(s);

                assert_non_null(name);
                assert_true(name[0] != '\0');
                for (RunStep o = 0; o < s; o++)
                        assert_string_not_equal(name, run_step_to_string(o));
        }
        assert_int_equal(sizeof(known) / sizeof(known[0]), _RUN_STEP_MAX);
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                assert_string_equal(run_step_to_string(known[i].step), known[i].name);
        assert_null(run_step_to_string(_RUN_STEP_MAX));
        assert_null(run_step_to_string(_RUN_STEP_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify_exit),
                cmocka_unit_test(test_classify_signals),
                cmocka_unit_test(test_classify_sandbox_facts),
                cmocka_unit_test(test_classify_precedence),
                cmocka_unit_test(test_format_error),
                cmocka_unit_test(test_format_error_signal),
                cmocka_unit_test(test_format_error_invalid),
                cmocka_unit_test(test_result_string_round_trip),
                cmocka_unit_test(test_step_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
