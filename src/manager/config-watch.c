/* config-watch: says when the configuration files on disk differ from the configuration in force
 * (m->cfg, the one published), as systemd says a unit "changed on disk": in STATUS= whenever a file in
 * /etc/difysandbox or its drop-in directory changes, and in GetStats (ConfigChangedOnDisk). The files
 * are compared by their values, so an edit undone or a comment changed is no difference. */

#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"
#include "config/config-drift.h"
#include "config/config-file.h"
#include "manager.h"

#define CONFIG_DIR "/etc/difysandbox"
/* What an editor, cp, install or rm does to a file of the directory. */
#define WATCH_MASK                                                                          \
        (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | \
         IN_DELETE_SELF | IN_ONLYDIR)

int manager_config_changed_on_disk(Manager *m) {
        return config_disk_differs(&m->cfg, environ);
}

/* STATUS= of the unit: what `systemctl status difysandbox-manager` shows. */
static void status_update(Manager *m) {
        int r = manager_config_changed_on_disk(m);

        if (r < 0) {
                log_warning_errno(r, "Cannot compare the configuration files with the one in force: %m");
                return;
        }
        if (r == 0 && !m->config_status_changed)
                return; /* leave what a reload said (a refused one says so) */
        m->config_status_changed = r > 0;
        (void) sd_notify(false, r > 0 ? "STATUS=Serving; the configuration changed on disk, "
                                        "'difysandboxctl reload' puts it in force"
                                      : "STATUS=Serving");
}

static int watch_dropins(Manager *m);

static int on_change(sd_event_source *s, const struct inotify_event *event, void *userdata) {
        Manager *m = userdata;

        if (event->mask & IN_IGNORED) {
                /* The watched directory went away (config.d removed): watch it again once it is back. */
                if (s == m->config_dropin_watch)
                        m->config_dropin_watch = sd_event_source_disable_unref(s);
        } else if (!m->config_dropin_watch)
                (void) watch_dropins(m); /* config.d may just have been created */
        status_update(m);
        return 0;
}

static int watch_dropins(Manager *m) {
        int r = sd_event_add_inotify(m->event, &m->config_dropin_watch, CONFIG_FILE_DROPIN_DIR, WATCH_MASK,
                                     on_change, m);
        return r == -ENOENT ? 0 : r;
}

int manager_config_watch(Manager *m) {
        int r;

        r = sd_event_add_inotify(m->event, &m->config_dir_watch, CONFIG_DIR, WATCH_MASK, on_change, m);
        if (r == -ENOENT)
                log_debug("No %s: its changes are not watched", CONFIG_DIR);
        else if (r < 0)
                return log_warning_errno(r, "Cannot watch %s for changes: %m", CONFIG_DIR);
        r = watch_dropins(m);
        if (r < 0)
                log_warning_errno(r, "Cannot watch %s for changes: %m", CONFIG_FILE_DROPIN_DIR);
        status_update(m); /* a configuration refused at start-up already differs */
        return 0;
}

void manager_config_watch_done(Manager *m) {
        m->config_dir_watch = sd_event_source_disable_unref(m->config_dir_watch);
        m->config_dropin_watch = sd_event_source_disable_unref(m->config_dropin_watch);
}
