/* redact: see redact.h. */

#include "redact.h"

#include <stdbool.h>
#include <string.h>

#define MASK "***"

/* Where a URL's authority (user information, host, port) ends. */
static bool authority_end(char c) {
        return c == '\0' || c == '/' || c == '?' || c == '#' || c == ' ' || c == '\t' || c == '\n' ||
               c == '\'' || c == '"' || c == '<' || c == '>' || c == '\\';
}

char *redact_url_credentials(char *s) {
        char *p = s;

        while ((p = strstr(p, "://"))) {
                char *start = p + 3, *end = start, *at = NULL;

                for (; !authority_end(*end); end++)
                        if (*end == '@')
                                at = end; /* the last one: a password may hold an unescaped '@' */
                if (!at || (size_t) (at - start) <= strlen(MASK)) {
                        if (at && strncmp(start, MASK, (size_t) (at - start)) != 0)
                                memset(start, '*', (size_t) (at - start)); /* too short to shrink */
                        p = end;
                        continue;
                }
                memcpy(start, MASK, strlen(MASK));
                memmove(start + strlen(MASK), at, strlen(at) + 1);
                p = start + strlen(MASK) + 1;
        }
        return s;
}
