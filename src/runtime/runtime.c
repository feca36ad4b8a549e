/* runtime: see runtime.h. */

#include "runtime.h"

#include <stdint.h>
#include <string.h>

#include "common/config.h"
#include "common/stats.h"

/* The shared stats file keeps a row per language, by the enum's value (common/stats.h cannot include
 * this folder): a new language raises STATS_LANGUAGES there, and STATS_FILE_VERSION with it. */
_Static_assert(_LANGUAGE_MAX == STATS_LANGUAGES,
               "common/stats.h: STATS_LANGUAGES is the number of languages");

const Runtime *runtime_get(Language language) {
        switch (language) {
        case LANGUAGE_PYTHON3:
                return python3_runtime();
        case LANGUAGE_NODEJS:
                return nodejs_runtime();
        case _LANGUAGE_MAX:
        case _LANGUAGE_INVALID:
                break;
        }
        return NULL;
}

Language language_from_string(const char *s) {
        if (!s)
                return _LANGUAGE_INVALID;
        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                if (strcmp(s, runtime_get(l)->name) == 0)
                        return l;
        return _LANGUAGE_INVALID;
}

const char *language_to_string(Language language) {
        const Runtime *rt = runtime_get(language);
        return rt ? rt->name : NULL;
}

/* The Config field at a descriptor's offset (runtime.h): the descriptor, not a branch, says which. */
#define CONFIG_FIELD(cfg, type, offset) (*(type const *) ((const char *) (cfg) + (offset)))

const char *runtime_interpreter(const Runtime *rt, const Config *cfg) {
        return CONFIG_FIELD(cfg, char *, rt->interpreter_offset);
}

char *const *runtime_pool_preload(const Runtime *rt, const Config *cfg) {
        return CONFIG_FIELD(cfg, char **, rt->preload_offset);
}

unsigned runtime_pool_size(const Runtime *rt, const Config *cfg) {
        return cfg->prewarm ? CONFIG_FIELD(cfg, uint32_t, rt->pool_size_offset) : 0;
}
