/* runtime: see runtime.h. */

#include "runtime.h"

#include <string.h>

#include "common/config.h"

const Runtime *runtime_get(Language language) {
        switch (language) {
        case LANGUAGE_PYTHON3:
                return python3_runtime();
        case LANGUAGE_NODEJS:
                return nodejs_runtime();
        default:
                return NULL;
        }
}

Language language_from_string(const char *s) {
        if (!s)
                return _LANGUAGE_INVALID;
        if (strcmp(s, "python3") == 0)
                return LANGUAGE_PYTHON3;
        if (strcmp(s, "nodejs") == 0)
                return LANGUAGE_NODEJS;
        return _LANGUAGE_INVALID;
}

const char *language_to_string(Language language) {
        const Runtime *rt = runtime_get(language);
        return rt ? rt->name : NULL;
}

const char *runtime_interpreter(const Runtime *rt, const Config *cfg) {
        switch (rt->language) {
        case LANGUAGE_PYTHON3:
                return cfg->python_path;
        case LANGUAGE_NODEJS:
                return cfg->nodejs_path;
        case _LANGUAGE_MAX:
        case _LANGUAGE_INVALID:
                break;
        }
        return NULL;
}

char *const *runtime_pool_preload(const Runtime *rt, const Config *cfg) {
        switch (rt->language) {
        case LANGUAGE_PYTHON3:
                return cfg->preload_python3;
        case LANGUAGE_NODEJS:
                return cfg->preload_nodejs;
        case _LANGUAGE_MAX:
        case _LANGUAGE_INVALID:
                break;
        }
        return NULL;
}

unsigned runtime_pool_size(const Runtime *rt, const Config *cfg) {
        if (!cfg->prewarm)
                return 0;
        switch (rt->language) {
        case LANGUAGE_PYTHON3:
                return cfg->pool_python3;
        case LANGUAGE_NODEJS:
                return cfg->pool_nodejs;
        case _LANGUAGE_MAX:
        case _LANGUAGE_INVALID:
                break;
        }
        return 0;
}
