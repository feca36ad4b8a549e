/* bus: see bus.h. */

#include "bus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "ctl/ctl.h"
#include "ctl/format.h"

#define DEFAULT_SYSTEM_BUS_ADDRESS "unix:path=/run/dbus/system_bus_socket"

int bus_open(sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *address;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                address = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                ctl_error(
                        "cannot reach the difysandbox manager: no system bus at %s (%s). Is D-Bus running? "
                        "(systemctl status dbus)",
                        address && *address ? address : DEFAULT_SYSTEM_BUS_ADDRESS, strerror(-r));
                return CTL_EXIT_UNREACHABLE;
        }
        *ret = TAKE_PTR(bus);
        return 0;
}

static int report_unreachable(const char *reason) {
        ctl_error("cannot reach the difysandbox manager on the system bus (" MANAGER_BUS_NAME "): %s. Is "
                  "difysandbox-manager.service running? (systemctl status difysandbox-manager)",
                  reason);
        return CTL_EXIT_UNREACHABLE;
}

int bus_report_error(const char *member, int r, const sd_bus_error *error, bool change) {
        /* clang-format off */
        static const char *const unreachable[] = {
                SD_BUS_ERROR_SERVICE_UNKNOWN,   /* no owner, and not activatable */
                SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                SD_BUS_ERROR_NO_REPLY,          /* it took the call and never answered */
                SD_BUS_ERROR_TIMEOUT,
                "org.freedesktop.DBus.Error.TimedOut",
                SD_BUS_ERROR_DISCONNECTED,
                SD_BUS_ERROR_NO_SERVER,
        };
        /* clang-format on */

        if (sd_bus_error_is_set(error)) {
                const char *message = error->message && *error->message ? error->message : NULL;

                for (size_t i = 0; i < ELEMENTSOF(unreachable); i++)
                        if (sd_bus_error_has_name(error, unreachable[i]))
                                return report_unreachable(message ? message : error->name);
                /* bus activation of the manager failed: org.freedesktop.DBus.Error.Spawn.ChildExited, ... */
                if (error->name && strncmp(error->name, "org.freedesktop.DBus.Error.Spawn.", 33) == 0)
                        return report_unreachable(message ? message : error->name);

                if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) ||
                    sd_bus_error_has_name(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED)) {
                        if (change)
                                ctl_error("permission denied: changing difysandbox needs root (try sudo)");
                        else
                                ctl_error("permission denied: %s (%s)", message ? message : member,
                                          error->name);
                        return CTL_EXIT_DENIED;
                }

                if (sd_bus_error_has_name(error, MANAGER_ERROR_CONFIG_INVALID))
                        ctl_error(
                                "the manager refused the configuration and keeps the one in force: %s (%s)",
                                message ? message : "no reason given", error->name);
                else if (message)
                        ctl_error("%s (%s)", message, error->name);
                else
                        ctl_error("%s failed (%s)", member, error->name);
                return r < 0 ? r : -EIO;
        }

        switch (r) {
        case -ENOTCONN:
        case -ECONNRESET:
        case -EPIPE:
                return report_unreachable("the connection to the system bus was lost");
        case -ETIMEDOUT:
                return report_unreachable("no answer in time");
        case -EACCES:
        case -EPERM:
                if (change)
                        ctl_error("permission denied: changing difysandbox needs root (try sudo)");
                else
                        ctl_error("permission denied: %s: %s", member, strerror(-r));
                return CTL_EXIT_DENIED;
        default:
                ctl_error("%s failed: %s", member, strerror(-r));
                return r;
        }
}

static int report_bad_reply(const char *member, int r) {
        ctl_error("cannot read the manager's reply to %s: %s (a manager of another version?)", member,
                  strerror(-r));
        return r;
}

int bus_new_call(sd_bus *bus, const char *member, sd_bus_message **ret) {
        int r;

        r = sd_bus_message_new_method_call(bus, ret, MANAGER_BUS_NAME, MANAGER_OBJECT_PATH,
                                           MANAGER_INTERFACE, member);
        if (r < 0) {
                ctl_error("cannot create the %s call: %s", member, strerror(-r));
                return r;
        }
        return 0;
}

int bus_call(sd_bus *bus, sd_bus_message *call, bool change, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call(bus, call, 0, &error, ret_reply);
        if (r < 0)
                return bus_report_error(sd_bus_message_get_member(call), r, &error, change);
        return 0;
}

/* Calls f for each entry of an a{sv}, with the variant's signature; f returns 1 when it consumed the
 * variant, 0 to have it skipped. */
static int read_dict_sv(sd_bus_message *m,
                        int (*f)(sd_bus_message *m, const char *key, const char *signature, void *userdata),
                        void *userdata) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *key, *signature;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(m, 's', &key);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, NULL, &signature);
                if (r < 0)
                        return r;
                r = f(m, key, signature, userdata);
                if (r == 0)
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(m);
}

static int read_json(sd_bus_message *m, const char *signature, json_object **ret);

/* s o t u d b, each as the JSON type that holds it. */
static int read_json_basic(sd_bus_message *m, char type, json_object **ret) {
        union {
                const char *s;
                uint64_t t;
                uint32_t u;
                double d;
                int b;
        } v;
        json_object *o;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;
        switch (type) {
        case 's':
        case 'o':
                o = json_object_new_string(v.s);
                break;
        case 't':
                o = json_object_new_uint64(v.t);
                break;
        case 'u':
                o = json_object_new_int64(v.u);
                break;
        case 'd':
                o = json_object_new_double(v.d);
                break;
        default: /* 'b' */
                o = json_object_new_boolean(v.b);
                break;
        }
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* The latency tuple (tttt): samples and the three percentiles. */
static int read_json_latency(sd_bus_message *m, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        uint64_t samples, p50, p95, p99;
        int r;

        r = sd_bus_message_read(m, "(tttt)", &samples, &p50, &p95, &p99);
        if (r < 0)
                return r;
        o = json_object_new_object();
        if (!o || json_object_object_add(o, "samples", json_object_new_uint64(samples)) < 0 ||
            json_object_object_add(o, "p50_usec", json_object_new_uint64(p50)) < 0 ||
            json_object_object_add(o, "p95_usec", json_object_new_uint64(p95)) < 0 ||
            json_object_object_add(o, "p99_usec", json_object_new_uint64(p99)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* One entry {sX} of a dictionary, added to o under its key. */
static int read_json_entry(sd_bus_message *m, const char *value_signature, json_object *o) {
        json_object *value = NULL;
        const char *key;
        int r;

        r = sd_bus_message_read_basic(m, 's', &key);
        if (r < 0)
                return r;
        r = read_json(m, value_signature, &value);
        if (r < 0)
                return r;
        if (json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

/* a{sX}, as an object whose members are the keys. */
static int read_json_dict(sd_bus_message *m, const char *signature, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *inner = NULL, *entry_contents = NULL;
        const char *entry = signature + 1; /* "{sX}" */
        int r;

        inner = strndup(signature + 3, strlen(signature) - 4); /* "X" */
        if (!inner)
                return -ENOMEM;
        entry_contents = strndup(entry + 1, strlen(entry) - 2); /* "sX" */
        if (!entry_contents)
                return -ENOMEM;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', entry);
        if (r < 0)
                return r;
        for (;;) {
                r = sd_bus_message_enter_container(m, 'e', entry_contents);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = read_json_entry(m, inner, o);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

/* One value of a signature GetStats uses, as JSON: s o t u d b, a{sX} (an object), and the latency tuple
 * (tttt). */
static int read_json(sd_bus_message *m, const char *signature, json_object **ret) {
        size_t n = strlen(signature);

        if (n == 1 && strchr("soudtb", signature[0]))
                return read_json_basic(m, signature[0], ret);
        if (streq(signature, "(tttt)"))
                return read_json_latency(m, ret);
        if (strncmp(signature, "a{s", 3) == 0 && signature[n - 1] == '}')
                return read_json_dict(m, signature, ret);
        return -EOPNOTSUPP;
}

/* clang-format off */
static const struct {
        const char *key, *signature, *json;
} stats_keys[] = {
        /* D-Bus key              type           JSON member */
        { "ActiveRuns",            "u",          "active_runs"            },
        { "ConfigChangedOnDisk",   "b",          "config_changed_on_disk" },
        { "ConfigLoadedAtUSec",    "t",          "config_loaded_at_usec"  },
        { "DependencyGenerations", "a{st}",      "dependency_generations" },
        { "EgressDenials",         "t",          "egress_denials"         },
        { "Latency",               "a{s(tttt)}", "latency"                },
        { "PoolByLanguage",        "a{sa{st}}",  "pool_by_language"       },
        { "RefusedCalls",          "a{sa{st}}",  "refused_calls"          },
        { "RunsByLanguage",        "a{sa{st}}",  "runs_by_language"       },
        { "RunsByResult",          "a{st}",      "runs_by_result"         },
        { "StatsSinceUSec",        "t",          "stats_since_usec"       },
        { "UidPoolFree",           "u",          "uid_pool_free"          },
        { "UidPoolSize",           "u",          "uid_pool_size"          },
        { "UptimeUSec",            "t",          "uptime_usec"            },
};
/* clang-format on */

static int stats_entry(sd_bus_message *m, const char *key, const char *signature, void *userdata) {
        json_object *stats = userdata, *value = NULL;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(stats_keys); i++) {
                if (!streq(key, stats_keys[i].key))
                        continue;
                if (!streq(signature, stats_keys[i].signature))
                        return 0; /* a type this version does not know: skipped, as an unknown key */
                r = sd_bus_message_enter_container(m, 'v', signature);
                if (r < 0)
                        return r;
                r = read_json(m, signature, &value);
                if (r < 0)
                        return r;
                if (json_object_object_add(stats, stats_keys[i].json, value) < 0) {
                        json_object_put(value);
                        return -ENOMEM;
                }
                r = sd_bus_message_exit_container(m);
                return r < 0 ? r : 1;
        }
        return 0;
}

int bus_get_stats(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(json_object_putp) json_object *stats = NULL;
        int r;

        r = bus_new_call(bus, "GetStats", &call);
        if (r != 0)
                return r;
        r = bus_call(bus, call, false, &reply);
        if (r != 0)
                return r;

        stats = json_object_new_object();
        if (!stats)
                return ctl_oom();
        r = read_dict_sv(reply, stats_entry, stats);
        if (r < 0)
                return report_bad_reply("GetStats", r);
        *ret = TAKE_PTR(stats);
        return 0;
}

int bus_get_version(sd_bus *bus, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_get_property_string(bus, MANAGER_BUS_NAME, MANAGER_OBJECT_PATH, MANAGER_INTERFACE,
                                       "Version", &error, ret);
        if (r < 0)
                return bus_report_error("Get Version", r, &error, false);
        return 0;
}

void job_properties_done(JobProperties *p) {
        free(p->state);
        p->state = NULL;
        free(p->log);
        p->log = NULL;
        p->has_progress = false;
}

static int job_property(sd_bus_message *m, const char *key, const char *signature, void *userdata) {
        JobProperties *p = userdata;
        const char *s;
        int r;

        if (streq(key, "Progress") && streq(signature, "d")) {
                r = sd_bus_message_read(m, "v", "d", &p->progress);
                if (r < 0)
                        return r;
                p->has_progress = true;
                return 1;
        }
        if ((streq(key, "State") || streq(key, "Log")) && streq(signature, "s")) {
                char *copy;

                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                copy = strdup(s);
                if (!copy)
                        return -ENOMEM;
                if (streq(key, "State")) {
                        free(p->state);
                        p->state = copy;
                } else {
                        free(p->log);
                        p->log = copy;
                }
                return 1;
        }
        return 0;
}

int bus_read_job_properties(sd_bus_message *m, JobProperties *ret) {
        _cleanup_(job_properties_done) JobProperties p = { 0 };
        int r;

        r = read_dict_sv(m, job_property, &p);
        if (r < 0)
                return r;
        *ret = p;
        p = (JobProperties){ 0 }; /* *ret owns the strings now */
        return 0;
}

static int job_get_all(sd_bus *bus, const char *path, JobProperties *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, MANAGER_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               NULL, &reply, "s", JOB_INTERFACE);
        if (r < 0)
                return r;
        return bus_read_job_properties(reply, ret);
}

int bus_list_jobs(sd_bus *bus, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(json_object_putp) json_object *jobs = NULL;
        int r;

        r = bus_new_call(bus, "ListJobs", &call);
        if (r != 0)
                return r;
        r = bus_call(bus, call, false, &reply);
        if (r != 0)
                return r;

        jobs = json_object_new_array();
        if (!jobs)
                return ctl_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(oss)");
        if (r < 0)
                return report_bad_reply("ListJobs", r);
        for (;;) {
                _cleanup_(job_properties_done) JobProperties p = { 0 };
                const char *path, *language, *kind;
                json_object *job;

                r = sd_bus_message_read(reply, "(oss)", &path, &language, &kind);
                if (r < 0)
                        return report_bad_reply("ListJobs", r);
                if (r == 0)
                        break;

                job = json_object_new_object();
                if (!job || json_object_array_add(jobs, job) < 0) {
                        json_object_put(job);
                        return ctl_oom();
                }
                if (json_object_object_add(job, "job", json_object_new_string(path)) < 0 ||
                    json_object_object_add(job, "language", json_object_new_string(language)) < 0 ||
                    json_object_object_add(job, "kind", json_object_new_string(kind)) < 0)
                        return ctl_oom();

                /* A job may end between ListJobs and this: then it is listed without its state. */
                if (job_get_all(bus, path, &p) < 0)
                        continue;
                if (p.state && json_object_object_add(job, "state", json_object_new_string(p.state)) < 0)
                        return ctl_oom();
                if (p.has_progress &&
                    json_object_object_add(job, "progress", json_object_new_double(p.progress)) < 0)
                        return ctl_oom();
        }
        *ret = TAKE_PTR(jobs);
        return 0;
}

static int compare_dependencies(const void *a, const void *b) {
        json_object *const *x = a, *const *y = b;
        json_object *xn = NULL, *yn = NULL;
        const char *sx, *sy;
        int c;

        (void) json_object_object_get_ex(*x, "name", &xn);
        (void) json_object_object_get_ex(*y, "name", &yn);
        sx = json_object_get_string(xn);
        sy = json_object_get_string(yn);
        c = strcasecmp(sx ? sx : "", sy ? sy : ""); /* pip names compare without case */
        return c != 0 ? c : strcmp(sx ? sx : "", sy ? sy : "");
}

int bus_list_dependencies(sd_bus *bus, const char *language, json_object **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(json_object_putp) json_object *deps = NULL;
        int r;

        r = bus_new_call(bus, "ListDependenciesEx", &call);
        if (r != 0)
                return r;
        r = sd_bus_message_append(call, "s", language);
        if (r < 0)
                return bus_report_error("ListDependenciesEx", r, NULL, false);
        r = bus_call(bus, call, false, &reply);
        if (r != 0)
                return r;

        deps = json_object_new_array();
        if (!deps)
                return ctl_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(sss)");
        if (r < 0)
                return report_bad_reply("ListDependenciesEx", r);
        for (;;) {
                const char *name, *version, *origin;
                json_object *dep;

                r = sd_bus_message_read(reply, "(sss)", &name, &version, &origin);
                if (r < 0)
                        return report_bad_reply("ListDependenciesEx", r);
                if (r == 0)
                        break;
                dep = json_object_new_object();
                if (!dep || json_object_array_add(deps, dep) < 0) {
                        json_object_put(dep);
                        return ctl_oom();
                }
                if (json_object_object_add(dep, "name", json_object_new_string(name)) < 0 ||
                    json_object_object_add(dep, "version", json_object_new_string(version)) < 0 ||
                    json_object_object_add(dep, "origin", json_object_new_string(origin)) < 0)
                        return ctl_oom();
        }
        json_object_array_sort(deps, compare_dependencies);
        *ret = TAKE_PTR(deps);
        return 0;
}
