/* config-drift: see config-drift.h. The comparison is of config_format() with secrets: the text the
 * manager publishes, so two configurations are equal exactly when a worker would load the same values. */

#include "config/config-drift.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "config/config-file.h"

static int format_to_string(const Config *cfg, char **ret) {
        char *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        r = config_format(cfg, f, /* show_secrets= */ true);
        if (fclose(f) != 0 || r < 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        return 0;
}

int config_equal(const Config *a, const Config *b) {
        _cleanup_free_ char *ta = NULL, *tb = NULL;

        if (format_to_string(a, &ta) < 0 || format_to_string(b, &tb) < 0)
                return -ENOMEM;
        return streq(ta, tb);
}

/* Defaults, then main_file (and, when dropin_dir is NULL, the default drop-ins), then env. */
static int load_fresh(Config *ret, const char *main_file, const char *dropin_dir, char **env) {
        _cleanup_(config_error_done) ConfigError err = { 0 };
        int r;

        r = config_init_defaults(ret);
        if (r < 0)
                return r;
        r = config_load(ret, main_file, dropin_dir, env, &err);
        if (r < 0)
                config_done(ret);
        return r;
}

int config_disk_differs(const Config *in_force, char **env) {
        Config disk;
        int r;

        r = load_fresh(&disk, NULL, NULL, env);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 1; /* refused now, so not what is in force */
        r = config_equal(&disk, in_force);
        config_done(&disk);
        return r < 0 ? r : !r;
}

static void warn_drift(const Config *cfg) {
        Config published;
        int r;

        /* Not there: the manager never published one, nothing is in force yet. Not readable: only root
         * may see the key it holds. */
        if (access(CONFIG_FILE_PUBLISHED, R_OK) < 0)
                return;
        r = load_fresh(&published, CONFIG_FILE_PUBLISHED, "", environ);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the configuration in force, %s: %m",
                                  CONFIG_FILE_PUBLISHED);
                return;
        }
        r = config_equal(cfg, &published);
        config_done(&published);
        if (r == 0)
                log_warning("The configuration files changed on disk: they differ from the configuration in "
                            "force (%s). Run 'difysandboxctl reload' to put them in force.",
                            CONFIG_FILE_PUBLISHED);
}

void config_check_warnings(const Config *cfg, const char *file) {
        if (!cfg->api_key && !cfg->api_key_digest)
                log_warning("app.key is not set: every request is refused with 401. Set it in %s/ and "
                            "give Dify the same value as CODE_EXECUTION_API_KEY.",
                            CONFIG_FILE_DROPIN_DIR);
        else if (cfg->api_key && streq(cfg->api_key, CONFIG_PUBLIC_KEY))
                log_warning("app.key is '" CONFIG_PUBLIC_KEY "', upstream's well-known default: anyone who "
                            "can reach the port can run code. Set a secret key.");
        if (!file)
                warn_drift(cfg);
}
