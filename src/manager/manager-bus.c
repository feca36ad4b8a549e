/* manager-bus: the object /org/difysandbox/Sandbox1, interface org.difysandbox.Sandbox1.Manager, exactly
 * as dbus/org.difysandbox.Sandbox1.xml describes it. Reads are open to everyone
 * (SD_BUS_VTABLE_UNPRIVILEGED); sd-bus itself refuses the other methods to callers that are not root,
 * behind the bus policy that already does, except RefreshDependencies, which the workers' user may call
 * too (check_root_or_worker()). */

#include <assert.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/packages.h"
#include "common/strv.h"
#include "manager.h"
#include "runtime/runtime.h"

int manager_language_check(const char *language, sd_bus_error *error) {
        if (language_from_string(language) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown language '%s': expected " RUNTIME_LANGUAGE_NAMES,
                                         language);
        return 0;
}

/* packages_list()'s array and its length, freed together (packages.c keeps a list of its own). */
typedef struct Dependencies {
        Package *items;
        size_t n;
} Dependencies;

static void dependencies_done(Dependencies *l) {
        l->items = packages_free(l->items, l->n);
        l->n = 0;
}

static int append_dependencies(sd_bus_message *reply, const Dependencies *l, bool with_origin) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', with_origin ? "(sss)" : "(ss)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < l->n; i++) {
                const Package *p = &l->items[i];

                if (with_origin)
                        r = sd_bus_message_append(reply, "(sss)", p->name, p->version,
                                                  package_origin_to_string(p->origin));
                else
                        r = sd_bus_message_append(reply, "(ss)", p->name, p->version);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* ListDependencies (name, version) and ListDependenciesEx (name, version, origin): packages.h's list. */
static int reply_dependencies(sd_bus_message *msg, Manager *m, bool with_origin, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(dependencies_done) Dependencies list = { 0 };
        _cleanup_free_ char *bad_path = NULL;
        const char *language;
        int r;

        r = sd_bus_message_read(msg, "s", &language);
        if (r < 0)
                return r;
        r = manager_language_check(language, error);
        if (r < 0)
                return r;
        r = packages_list(m->cfg.runtime_dir, language, &list.items, &list.n, &bad_path);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && bad_path)
                return manager_error_set_failedf(error, r, "Cannot list the %s dependencies: %s: %m",
                                                 language, bad_path);
        if (r < 0)
                return manager_error_set_failedf(error, r, "Cannot list the %s dependencies: %m", language);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = append_dependencies(reply, &list, with_origin);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_dependencies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_dependencies(msg, userdata, /* with_origin= */ false, error);
}

static int method_list_dependencies_ex(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_dependencies(msg, userdata, /* with_origin= */ true, error);
}

static int start_job(sd_bus_message *msg, Manager *m, const char *language, const char *kind,
                     char **packages, sd_bus_error *error) {
        const char *path;
        int r;

        r = job_start(m, language, kind, packages, &path, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "o", path);
}

/* InstallDependencies and RemoveDependencies: a language and at least one package. */
static int packages_job(sd_bus_message *msg, Manager *m, const char *kind, sd_bus_error *error) {
        _cleanup_(strv_freep) char **packages = NULL;
        const char *language;
        int r;

        r = sd_bus_message_read(msg, "s", &language);
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(msg, &packages);
        if (r < 0)
                return r;
        if (!packages || !packages[0])
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "No packages given: name at least one%s",
                                         streq(kind, "install") ? ", or use RefreshDependencies" : "");
        return start_job(msg, m, language, kind, packages, error);
}

static int method_install_dependencies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return packages_job(msg, userdata, "install", error);
}

static int method_remove_dependencies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return packages_job(msg, userdata, "remove", error);
}

/* RefreshDependencies is open to root and to the HTTP workers' user (worker_user): Dify's
 * /v1/sandbox/dependencies/refresh and /update routes ask for it, from a worker that holds no privilege
 * (DESIGN §2), after checking the API key. It only reinstalls what the operator configured. */
static int check_root_or_worker(sd_bus_message *msg, const Manager *m, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        struct passwd *pw;
        uid_t euid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return r;
        if (euid == 0)
                return 0;
        pw = getpwnam(m->cfg.worker_user);
        if (pw && pw->pw_uid == euid)
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Only root and the workers' user '%s' may refresh dependencies",
                                 m->cfg.worker_user);
}

static int method_refresh_dependencies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *language;
        int r;

        r = check_root_or_worker(msg, userdata, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "s", &language);
        if (r < 0)
                return r;
        return start_job(msg, userdata, language, "refresh", NULL, error);
}

static int method_list_jobs(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = manager_append_jobs(userdata, reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_reload_config(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        int r;

        r = manager_config_reload(userdata, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "");
}

static int method_get_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = manager_append_stats(userdata, reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", VERSION);
}

static int property_get_active_runs(sd_bus *bus, const char *path, const char *interface,
                                    const char *property, sd_bus_message *reply, void *userdata,
                                    sd_bus_error *error) {
        Manager *m = userdata;
        StatsSnapshot snap;

        if (!m->stats || stats_snapshot(m->stats, &snap) < 0)
                return sd_bus_message_append(reply, "u", 0U);
        return sd_bus_message_append(reply, "u", (uint32_t) snap.active_runs);
}

static int property_get_uid_pool(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        uint32_t free_uids = 0;
        int r;

        if (streq(property, "UidPoolSize"))
                return sd_bus_message_append(reply, "u", m->cfg.uid_max - m->cfg.uid_min + 1);
        r = manager_uid_pool_free(m, &free_uids);
        if (r < 0)
                return manager_error_set_failedf(error, r, "Cannot count the free UIDs in %s: %m",
                                                 m->cfg.state_dir);
        return sd_bus_message_append(reply, "u", free_uids);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("ListDependencies", SD_BUS_ARGS("s", language),
                                SD_BUS_RESULT("a(ss)", dependencies), method_list_dependencies,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListDependenciesEx", SD_BUS_ARGS("s", language),
                                SD_BUS_RESULT("a(sss)", dependencies), method_list_dependencies_ex,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("InstallDependencies", SD_BUS_ARGS("s", language, "as", packages),
                                SD_BUS_RESULT("o", job), method_install_dependencies, 0),
        SD_BUS_METHOD_WITH_ARGS("RemoveDependencies", SD_BUS_ARGS("s", language, "as", packages),
                                SD_BUS_RESULT("o", job), method_remove_dependencies, 0),
        SD_BUS_METHOD_WITH_ARGS("RefreshDependencies", SD_BUS_ARGS("s", language), SD_BUS_RESULT("o", job),
                                method_refresh_dependencies, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(oss)", jobs), method_list_jobs,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReloadConfig", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload_config, 0),
        SD_BUS_METHOD_WITH_ARGS("GetStats", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", stats), method_get_stats,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("JobRemoved", SD_BUS_ARGS("o", job, "s", result), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DependenciesChanged", SD_BUS_ARGS("s", language, "t", generation), 0),
        SD_BUS_SIGNAL("ConfigReloaded", "", 0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ActiveRuns", "u", property_get_active_runs, 0, 0),
        SD_BUS_PROPERTY("UidPoolFree", "u", property_get_uid_pool, 0, 0),
        SD_BUS_PROPERTY("UidPoolSize", "u", property_get_uid_pool, 0, 0),
        SD_BUS_PROPERTY("StartedAt", "t", NULL, offsetof(Manager, started_realtime_usec),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ConfigLoadedAt", "t", NULL, offsetof(Manager, config_loaded_realtime_usec),
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_VTABLE_END,
};

int manager_error_set_failedf(sd_bus_error *reterr, int error, const char *format, ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int r;

        assert(error < 0);
        va_start(ap, format);
        errno = -error; /* what %m prints */
        r = vasprintf(&message, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return sd_bus_error_set(reterr, MANAGER_ERROR_FAILED, message);
}

int manager_emit_dependencies_changed(Manager *m, const char *language, uint64_t generation) {
        return sd_bus_emit_signal(m->bus, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, "DependenciesChanged",
                                  "st", language, generation);
}

int manager_bus_register(Manager *m) {
        int r;

        r = sd_bus_add_object_vtable(m->bus, NULL, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, manager_vtable,
                                     m);
        if (r < 0)
                return r;
        r = job_register_vtable(m);
        if (r < 0)
                return r;
        return sd_bus_add_object_manager(m->bus, NULL, MANAGER_OBJECT_PATH);
}
