/* Unit tests of src/sandbox/scope.c against a fake systemd: a private dbus-daemon (found through
 * DBUS_SYSTEM_BUS_ADDRESS) where a forked child owns org.freedesktop.systemd1 and refuses
 * StartTransientUnit as systemd refuses a unit in a masked slice. sd_booted() is made true in a private
 * mount namespace (a tmpfs on /run with systemd/system/ in it), so the test needs root and dbus-daemon,
 * and skips without them. */

#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-bus.h>

#include "sandbox/cgroup.h"
#include "sandbox/scope.h"

#define REFUSAL "Unit difysandbox-runs.slice is masked."

static const char bus_config[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<busconfig><type>session</type><listen>unix:path=%s/bus.sock</listen><auth>EXTERNAL</auth>\n"
        "<policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
        "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n";

typedef struct Fixture {
        char dir[64];
        pid_t daemon, fake;
} Fixture;

/* Set once a client subscribed: from then on the fake refuses every unit, so a test whose run succeeds
 * shows that scope.c did not subscribe (a run's job end reaches its requester without it). */
static bool fake_subscribed;

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        fake_subscribed = true;
        return sd_bus_reply_method_return(m, "");
}

/* By the unit's name: "...-refused.scope" is refused as a unit in a masked slice; "...-done.scope" and
 * "...-failed.scope" get a job whose end, with that result, is announced after another job's. */
static int method_start_transient_unit(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *unit, *result;
        int r;

        if (fake_subscribed)
                return sd_bus_error_set(error, "org.difysandbox.Test.Subscribed", "a client subscribed");
        r = sd_bus_message_read(m, "s", &unit);
        if (r < 0)
                return r;
        if (strstr(unit, "-refused."))
                return sd_bus_error_set(error, "org.freedesktop.systemd1.UnitMasked", REFUSAL);
        result = strstr(unit, "-done.") ? "done" : "failed";
        r = sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/7");
        if (r < 0)
                return r;
        r = sd_bus_emit_signal(sd_bus_message_get_bus(m), "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "JobRemoved", "uoss", 6U,
                               "/org/freedesktop/systemd1/job/6", "other.service", "failed");
        if (r < 0)
                return r;
        return sd_bus_emit_signal(sd_bus_message_get_bus(m), "/org/freedesktop/systemd1",
                                  "org.freedesktop.systemd1.Manager", "JobRemoved", "uoss", 7U,
                                  "/org/freedesktop/systemd1/job/7", unit, result);
}

static const sd_bus_vtable fake_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, 0),
        SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", method_start_transient_unit, 0),
        SD_BUS_VTABLE_END,
};

/* The fake systemd: owns the name, says so on ready_fd, then serves until killed. */
static void fake_systemd(const char *address, int ready_fd) {
        sd_bus *bus = NULL;

        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 ||
            sd_bus_set_bus_client(bus, 1) < 0 || sd_bus_start(bus) < 0 ||
            sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", fake_vtable, NULL) < 0 ||
            sd_bus_request_name(bus, "org.freedesktop.systemd1", 0) < 0)
                _exit(EXIT_FAILURE);
        if (write(ready_fd, "r", 1) != 1)
                _exit(EXIT_FAILURE);
        for (;;) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        _exit(EXIT_FAILURE);
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        _exit(EXIT_FAILURE);
        }
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        char config[128], command[256], address[256] = "", *nl;
        int ready[2];
        char c;
        FILE *p;

        assert_non_null(f);
        *state = f;
        if (geteuid() != 0 || access("/usr/bin/dbus-daemon", X_OK) < 0)
                return 0; /* the tests skip */
        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/test-scope-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        (void) snprintf(config, sizeof(config), "%s/bus.conf", f->dir);
        p = fopen(config, "we");
        assert_non_null(p);
        assert_true(fprintf(p, bus_config, f->dir) > 0);
        assert_int_equal(fclose(p), 0);

        (void) snprintf(command, sizeof(command),
                        "dbus-daemon --config-file=%s --fork --print-address=1 --print-pid=1 --nopidfile",
                        config);
        p = popen(command, "r");
        assert_non_null(p);
        assert_non_null(fgets(address, sizeof(address), p));
        assert_int_equal(fscanf(p, "%d", &f->daemon), 1);
        (void) pclose(p);
        nl = strchr(address, '\n');
        if (nl)
                *nl = '\0';
        assert_int_equal(setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1), 0);

        assert_int_equal(pipe(ready), 0);
        f->fake = fork();
        assert_true(f->fake >= 0);
        if (f->fake == 0) {
                close(ready[0]);
                fake_systemd(address, ready[1]);
        }
        close(ready[1]);
        assert_int_equal(read(ready[0], &c, 1), 1); /* the name is owned */
        close(ready[0]);

        /* sd_booted() asks whether /run/systemd/system exists: here, in our own mount namespace only */
        assert_int_equal(unshare(CLONE_NEWNS), 0);
        assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
        assert_int_equal(mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"), 0);
        assert_int_equal(mkdir("/run/systemd", 0755), 0);
        assert_int_equal(mkdir("/run/systemd/system", 0755), 0);
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char command[128];

        if (f->fake > 0) {
                (void) kill(f->fake, SIGKILL);
                (void) waitpid(f->fake, NULL, 0);
        }
        if (f->daemon > 0)
                (void) kill(f->daemon, SIGTERM); /* our own dbus-daemon, by the pid it printed */
        if (f->dir[0]) {
                (void) snprintf(command, sizeof(command), "rm -rf '%s'", f->dir);
                (void) system(command);
        }
        free(f);
        return 0;
}

static int start(Fixture *f, const char *unit, char **detail) {
        CgroupLimits limits = { .memory_max = 64ULL << 20, .cpu_quota_percent = 100, .tasks_max = 8 };
        ScopeManager *m = NULL;
        int r;

        assert_int_equal(scope_manager_open(&m), 0);
        r = scope_start(m, unit, "test", "difysandbox-runs.slice", getpid(), &limits, 5ULL * 1000000ULL,
                        detail);
        scope_manager_free(m);
        return r;
}

/* A refused StartTransientUnit reaches the caller with systemd's own words and the unit's name, not as a
 * bare errno (issue 15: scope.c dropped systemd's error message). */
static void test_refusal_carries_systemds_message(void **state) {
        Fixture *f = *state;
        char *detail = NULL;

        if (f->daemon <= 0)
                skip();
        assert_true(start(f, "difysandbox-run-refused.scope", &detail) < 0);
        assert_non_null(detail);
        assert_string_equal(detail, "difysandbox-run-refused.scope: " REFUSAL);
        free(detail);
}

/* The start returns once its own job ended "done" (another job's end before it does not count), and
 * without subscribing to all of systemd's signals (issue 25: a call to PID 1 per run). */
static void test_start_waits_for_its_own_job(void **state) {
        Fixture *f = *state;
        char *detail = NULL;

        if (f->daemon <= 0)
                skip();
        assert_int_equal(start(f, "difysandbox-run-done.scope", &detail), 0);
        assert_null(detail);
}

/* A job that ends other than "done" fails the start: the run must not go on outside its limits. */
static void test_failed_job_fails_the_start(void **state) {
        Fixture *f = *state;
        char *detail = NULL;

        if (f->daemon <= 0)
                skip();
        assert_int_equal(start(f, "difysandbox-run-failed.scope", &detail), -EIO);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_refusal_carries_systemds_message, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_waits_for_its_own_job, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_job_fails_the_start, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
