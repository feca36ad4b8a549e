/* libFuzzer target: a config file through config_load(), and what config_format() prints through it
 * again (the manager publishes that text and every worker loads it back). A file that loads must print a
 * text that loads to the same text; a crash, leak or UB is a finding. */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "config/config-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *format(const Config *cfg) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f || config_format(cfg, f, /* show_secrets= */ true) < 0)
                abort();
        if (fclose(f) != 0)
                abort();
        return text;
}

static int load(const char *path, const void *data, size_t size, Config *cfg) {
        ConfigError err = { 0 };
        int fd, r;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, data, size) != (ssize_t) size || close(fd) < 0)
                abort();
        if (config_init_defaults(cfg) < 0)
                abort();
        r = config_load(cfg, path, "", NULL, &err);
        if (r < 0 && r != -ENOMEM && !err.message)
                abort(); /* every refusal says why */
        config_error_done(&err);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char path[64];
        char *first, *second;
        Config cfg, back;

        if (!path[0])
                (void) snprintf(path, sizeof(path), "/tmp/fuzz-config-%d.yaml", (int) getpid());
        if (load(path, data, size, &cfg) < 0) {
                config_done(&cfg);
                return 0;
        }
        first = format(&cfg);
        config_done(&cfg);
        if (load(path, first, strlen(first), &back) < 0)
                abort(); /* what we print must load */
        second = format(&back);
        config_done(&back);
        if (strcmp(first, second) != 0)
                abort(); /* and mean the same */
        free(first);
        free(second);
        return 0;
}
