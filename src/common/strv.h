#pragma once
/* strv: NULL-terminated lists of strings that own their items, as systemd's strv.h has them. A plain
 * helper: anyone may include it, and it includes nothing of ours but cleanup.h. */

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

/* Frees every item and the list. NULL-safe, returns NULL, so l = strv_free(l) works. */
char **strv_free(char **l);

/* The number of items before the terminating NULL; 0 for NULL. */
size_t strv_length(char *const *l);

/* Whether s is one of l's items; false for a NULL l. */
bool strv_contains(char *const *l, const char *s);

static inline void strv_freep(char ***l) {
        (void) strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)
