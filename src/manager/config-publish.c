/* config-publish: ReloadConfig (DESIGN §4). The manager reads CONFIG_FILE_MAIN and its drop-ins, and
 * only if they are valid writes the effective configuration to CONFIG_FILE_PUBLISHED, which is what
 * workers load (config_setup()). Then it bumps the configuration generation in the shared stats, which
 * each worker compares before every request, so a request that starts after the reply uses the new
 * configuration. A refused configuration changes nothing: the published file stays as it was. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/time-util.h"
#include "config/config-file.h"
#include "manager.h"

static void config_donep(Config *cfg) {
        config_done(cfg);
}

/* Writes cfg, secrets included, to fd, which it takes, and syncs it. */
static int write_config_fd(const Config *cfg, int fd) {
        _cleanup_close_ int owned = fd;
        _cleanup_(fclosep) FILE *f = NULL;
        int r;

        f = fdopen(owned, "w");
        if (!f)
                return -errno;
        owned = -EBADF; /* f closes it now */
        (void) fputs("# Written by difysandbox-manager: the configuration it accepted last. Edit\n"
                     "# /etc/difysandbox/config.yaml instead, then run `difysandboxctl reload`.\n",
                     f);
        r = config_format(cfg, f, true);
        if (r < 0)
                return r;
        if (fflush(f) != 0)
                return -errno;
        if (fsync(fileno(f)) < 0)
                return -errno;
        if (fclose(TAKE_PTR(f)) != 0)
                return -errno;
        return 0;
}

/* Writes cfg to CONFIG_FILE_PUBLISHED: a new file renamed over the old one, so a worker reads either the
 * old or the new file, whole. Root-only: it holds app.key. */
static int publish(const Config *cfg) {
        _cleanup_free_ char *tmp = NULL;
        int fd, r;

        if (mkdir(CONFIG_FILE_PUBLISHED_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (asprintf(&tmp, "%s.%d.tmp", CONFIG_FILE_PUBLISHED, (int) getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_config_fd(cfg, fd);
        if (r >= 0 && rename(tmp, CONFIG_FILE_PUBLISHED) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp); /* no half-written file is left behind */
        return r;
}

/* Loads the operator's files and this process's environment into a fresh Config. */
static int load(Config *ret, char **reterr) {
        _cleanup_(config_error_done) ConfigError err = { 0 };
        _cleanup_(config_donep) Config cfg = { 0 };
        int r;

        r = config_init_defaults(&cfg);
        if (r < 0)
                return r;
        r = config_load(&cfg, CONFIG_FILE_MAIN, CONFIG_FILE_DROPIN_DIR, environ, &err);
        if (r < 0) {
                if (err.n > 1) {
                        if (asprintf(reterr, "%s (and %zu more errors: difysandbox check-config lists them)",
                                     err.message, err.n - 1) < 0)
                                *reterr = NULL;
                } else if (err.message)
                        *reterr = TAKE_PTR(err.message);
                else if (asprintf(reterr, "cannot load %s: %s", CONFIG_FILE_MAIN, strerror(-r)) < 0)
                        *reterr = NULL;
                return r;
        }
        *ret = cfg;
        cfg = (Config){ 0 };
        return 0;
}

/* Opens the shared stats of cfg's state directory; the manager works without them. */
static Stats *stats_for(const Config *cfg) {
        Stats *s = NULL;
        int r;

        r = stats_open(cfg->state_dir, &s);
        if (r < 0) {
                log_warning_errno(r, "Cannot open the shared stats in %s, stats will be empty: %m",
                                  cfg->state_dir);
                return NULL;
        }
        return s;
}

/* Puts a published configuration in force: workers reload before their next request. */
static void commit(Manager *m, Config *cfg) {
        bool moved = !streq(cfg->state_dir, m->cfg.state_dir);

        /* Workers watch the generation in the state directory they run with: the old one. */
        stats_bump_config_generation(m->stats);
        if (moved) {
                stats_close(m->stats);
                m->stats = stats_for(cfg);
        }
        config_done(&m->cfg);
        m->cfg = *cfg;
        *cfg = (Config){ 0 };
        m->config_loaded_realtime_usec = now(CLOCK_REALTIME);
}

int manager_config_start(Manager *m) {
        _cleanup_free_ char *why = NULL;
        _cleanup_(config_donep) Config cfg = { 0 };
        int r;

        r = load(&cfg, &why);
        if (r == -ENOMEM)
                return log_error_errno(r, "Cannot load the configuration: %m");
        if (r < 0) {
                /* Keep serving the configuration published before, if there is one: refusing to start
                 * would only take the control plane away from an operator who must fix the file. */
                (void) sd_journal_send("MESSAGE=Configuration refused, keeping %s: %s",
                                       CONFIG_FILE_PUBLISHED, why ? why : strerror(-r),
                                       "MESSAGE_ID=" MESSAGE_CONFIG_REFUSED_STR, "PRIORITY=%i", LOG_ERR,
                                       "DIFYSANDBOX_REASON=%s", why ? why : strerror(-r), NULL);
                log_error("Invalid configuration: %s", why ? why : strerror(-r));
                if (access(CONFIG_FILE_PUBLISHED, F_OK) < 0)
                        return -EINVAL;
                r = config_setup(&cfg, NULL); /* the published file, which was valid when written */
                if (r < 0)
                        return r;
                m->cfg = cfg;
                cfg = (Config){ 0 };
                m->stats = stats_for(&m->cfg);
                m->config_loaded_realtime_usec = now(CLOCK_REALTIME);
                return 0;
        }

        r = publish(&cfg);
        if (r < 0)
                return log_error_errno(r, "Cannot publish the configuration to %s: %m",
                                       CONFIG_FILE_PUBLISHED);
        m->cfg = cfg;
        cfg = (Config){ 0 };
        m->stats = stats_for(&m->cfg);
        stats_bump_config_generation(m->stats); /* workers started before us reload too */
        m->config_loaded_realtime_usec = now(CLOCK_REALTIME);
        log_info("Configuration loaded from %s and published to %s", CONFIG_FILE_MAIN,
                 CONFIG_FILE_PUBLISHED);
        return 0;
}

int manager_config_reload(Manager *m, sd_bus_error *reterr) {
        _cleanup_free_ char *why = NULL;
        _cleanup_(config_donep) Config cfg = { 0 };
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading the configuration");
        r = load(&cfg, &why);
        if (r == -ENOMEM) {
                (void) sd_notify(false, "READY=1\nSTATUS=Serving");
                return r;
        }
        if (r < 0) {
                (void) sd_journal_send("MESSAGE=Configuration refused, the previous one stays in force: %s",
                                       why ? why : strerror(-r), "MESSAGE_ID=" MESSAGE_CONFIG_REFUSED_STR,
                                       "PRIORITY=%i", LOG_ERR, "DIFYSANDBOX_REASON=%s",
                                       why ? why : strerror(-r), NULL);
                (void) sd_notify(false,
                                 "READY=1\nSTATUS=Serving; the last reload was refused, see the journal");
                /* The reason alone: the error's name says that the configuration was refused and the
                 * one in force stays, and difysandboxctl says it in words. */
                return sd_bus_error_setf(reterr, MANAGER_ERROR_CONFIG_INVALID, "%s",
                                         why ? why : strerror(-r));
        }

        r = publish(&cfg);
        if (r < 0) {
                log_error_errno(r, "Cannot publish the configuration to %s: %m", CONFIG_FILE_PUBLISHED);
                (void) sd_notify(false, "READY=1\nSTATUS=Serving; the last reload failed, see the journal");
                return manager_error_set_failedf(reterr, r, "Cannot publish the configuration to %s: %m",
                                                 CONFIG_FILE_PUBLISHED);
        }
        commit(m, &cfg);
        (void) sd_journal_send("MESSAGE=Configuration reloaded from %s", CONFIG_FILE_MAIN,
                               "MESSAGE_ID=" MESSAGE_CONFIG_RELOADED_STR, "PRIORITY=%i", LOG_INFO, NULL);
        (void) sd_notify(false, "READY=1\nSTATUS=Serving");
        (void) sd_bus_emit_signal(m->bus, MANAGER_OBJECT_PATH, MANAGER_INTERFACE, "ConfigReloaded", "");
        (void) sd_bus_emit_properties_changed(m->bus, MANAGER_OBJECT_PATH, MANAGER_INTERFACE,
                                              "ConfigLoadedAt", NULL);
        return 0;
}
