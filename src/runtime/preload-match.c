/* preload-match: see preload-match.h. */

#include "preload-match.h"

#include <string.h>

static bool is_word_byte(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The top-level name: importing "numpy.linalg" imports numpy, which is what code names. */
static bool names(const char *code, size_t len, const char *module) {
        size_t n = strcspn(module, ".");

        if (n == 0 || n > len)
                return false;
        for (const char *p = code, *end = code + len; (size_t) (end - p) >= n;) {
                const char *hit = memmem(p, (size_t) (end - p), module, n);

                if (!hit)
                        return false;
                bool starts = hit == code || !is_word_byte((unsigned char) hit[-1]);
                bool ends = hit + n == end || !is_word_byte((unsigned char) hit[n]);
                if (starts && ends)
                        return true;
                p = hit + 1;
        }
        return false;
}

bool code_names_module(const char *code, size_t len, char *const *modules) {
        if (!code || !modules)
                return false;
        for (char *const *m = modules; *m; m++)
                if (names(code, len, *m))
                        return true;
        return false;
}
