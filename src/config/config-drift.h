#pragma once
/* config-drift: whether the configuration files on disk are the configuration in force, the way systemd
 * says a unit "changed on disk", and the warnings `difysandbox check-config` adds to a configuration that
 * loads (an unset or public key, files that differ from the one in force). Logs only in
 * config_check_warnings(). */

#include <stdbool.h>

typedef struct Config Config;

/* The key everybody knows: upstream's default. It works only when a file or API_KEY says it. */
#define CONFIG_PUBLIC_KEY "dify-sandbox"

/* 1 when a and b hold the same values (secrets included), 0 when not, -ENOMEM. */
int config_equal(const Config *a, const Config *b);

/* Loads CONFIG_FILE_MAIN and its drop-ins with the overrides of env on the defaults and compares them
 * with in_force: 1 when they differ (or the files are refused now), 0 when they are the same, or a
 * negative errno. */
int config_disk_differs(const Config *in_force, char **env);

/* Warns about what check-config found in cfg, the configuration loaded from file (NULL: the default
 * files and drop-ins): no app.key (every request refused), the public key, and, for the default files,
 * a difference from CONFIG_FILE_PUBLISHED, the configuration in force. */
void config_check_warnings(const Config *cfg, const char *file);
