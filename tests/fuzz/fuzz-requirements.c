/* libFuzzer target: a requirement file (python-requirements.txt or nodejs-packages.txt) through
 * requirements_parse(), for both languages; the first byte picks the language. Operators write these
 * files and pip or npm get what passes: a crash, leak or UB is a finding, and so is a refusal without a
 * reason. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manager/requirements.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RequirementSet set = { 0 };
        char *text, *why = NULL;
        Language language;
        int r;

        if (size < 1)
                return 0;
        language = data[0] & 1 ? LANGUAGE_NODEJS : LANGUAGE_PYTHON3;
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        r = requirements_parse(language, text, "fuzz", &set, &why);
        if (r == -EINVAL && !why)
                abort();
        free(why);
        requirement_set_done(&set);
        free(text);
        return 0;
}
