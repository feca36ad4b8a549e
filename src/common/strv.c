/* strv: see strv.h. */

#include "strv.h"

#include <stdlib.h>
#include <string.h>

char **strv_free(char **l) {
        for (char **s = l; s && *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        for (; l && *l; l++)
                n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}
