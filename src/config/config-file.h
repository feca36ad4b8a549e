#pragma once
/* config-file: reads the configuration into a Config: the main YAML file, its drop-ins, then the
 * environment overrides (DESIGN §1, difysandbox.conf(5)), and prints the effective values back. It owns
 * the list of keys, their types, limits and environment variables; nothing else parses config text.
 * Non-logging, except config_check_main(), which is the body of `difysandbox check-config`. */

#include <stdbool.h>
#include <stdio.h>

typedef struct Config Config;

#define CONFIG_FILE_MAIN "/etc/difysandbox/config.yaml"
#define CONFIG_FILE_DROPIN_DIR "/etc/difysandbox/config.d"
/* The configuration difysandbox-manager last accepted (ReloadConfig), as config_format() prints it with
 * secrets: one file, no drop-ins. While it exists, it is what the programs load by default instead of
 * CONFIG_FILE_MAIN and its drop-ins, so that a file edited but refused by a reload is not used. */
#define CONFIG_FILE_PUBLISHED_DIR "/run/difysandbox/manager"
#define CONFIG_FILE_PUBLISHED CONFIG_FILE_PUBLISHED_DIR "/config.yaml"

/* Why a load failed, for the operator: "FILE:LINE: KEY: 'VALUE': REASON", or "environment variable X:
 * KEY: 'VALUE': REASON". Parts that do not apply are left out (a malformed file has no key). */
typedef struct ConfigError {
        char *message; /* the first error, malloc'ed; NULL while there is no error */
        char *all;     /* every error found, in order, each ending in "\n"; malloc'ed */
        size_t n;      /* how many */
} ConfigError;

void config_error_done(ConfigError *e); /* frees the message, leaves e empty */

/* Applies, on top of what cfg holds (callers start from config_init_defaults()):
 *   1. main_file (NULL: CONFIG_FILE_MAIN). A missing file is fine; an unreadable or malformed one is not.
 *   2. every *.yaml in dropin_dir (NULL: CONFIG_FILE_DROPIN_DIR; "": none), in strcmp() order of the
 *      names, each overriding what came before. Hidden files and other names are ignored; a missing
 *      directory is fine.
 *   3. the environment overrides found in env (a NULL-terminated "NAME=value" array, as environ; may be
 *      NULL), which win over every file.
 * Within one file a key given twice takes its later value; a list (allowed_syscalls) is replaced whole,
 * never merged. Unknown keys, values of the wrong shape or out of range are refused.
 *
 * Every error is collected: a bad value or an unknown key does not stop the reading, so that one pass
 * finds them all (malformed YAML stops its file, whose structure is lost after it); the UID range is
 * checked only when no error came before.
 *
 * Returns 0, -EINVAL for a bad value or malformed YAML, another -errno for a file that cannot be read
 * (the first error's), or -ENOMEM. On failure *reterr (if not NULL) says why, and cfg may have been partly
 * changed: load into a fresh Config and swap it in only on success (a reload that fails keeps the old
 * configuration). */
int config_load(Config *cfg, const char *main_file, const char *dropin_dir, char **env, ConfigError *reterr);

/* Prints the effective values, one "key: value" line each, in a YAML that config_load() reads back to
 * the same Config. app.key is printed as <set> unless show_secrets. python_lib_path, which is accepted
 * but not kept, is not printed. Returns 0 or -EIO. */
int config_format(const Config *cfg, FILE *f, bool show_secrets);

/* What a worker is handed (the runner's answer to its configuration request): config_format() of cfg
 * with app.key replaced by app.key_digest (a new salt each time) and what a worker never uses that may
 * hold a password left empty (python_pip_mirror_url, npm_registry, proxy.*). Returns 0 or a negative
 * errno. */
int config_format_for_worker(const Config *cfg, FILE *f);

/* The same on a worker's own cfg (its --config file, or serve's configuration in a forked worker): the
 * key's bytes and those values are zeroed where they are and dropped, the digest put in. Returns 0 or a
 * negative errno. */
int config_scrub_for_worker(Config *cfg);

/* What every program of ours but the manager starts with: defaults, then FILE alone (--config), or
 * else CONFIG_FILE_PUBLISHED alone if it exists, or else the main file and its drop-ins; then the
 * environment of this process. Logs why a configuration is refused (a logging
 * function, like config_check_main()); on failure cfg is left empty. */
int config_setup(Config *cfg, const char *file);

/* `difysandbox check-config [FILE]`: loads FILE (only it: no drop-ins; it must exist) or, without FILE,
 * the default main file and drop-ins, then the overrides of this process's environment. Prints the
 * effective configuration on stdout and returns 0, or logs why it is refused and returns < 0. */
int config_check_main(const char *file, bool show_secrets);
