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
        return rt->language == LANGUAGE_PYTHON3 ? cfg->python_path : cfg->nodejs_path;
}
