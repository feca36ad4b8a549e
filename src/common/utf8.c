/* utf8: see utf8.h. */

#include "utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence at s (at most len bytes), or 0 when it is invalid. */
static size_t sequence_length(const unsigned char *s, size_t len) {
        unsigned char c = s[0];
        size_t n;
        uint32_t cp, min;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
                min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
                min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
                min = 0x10000;
        } else
                return 0;
        if (n > len)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

size_t utf8_sequence_length(const char *s, size_t len) {
        return sequence_length((const unsigned char *) s, len);
}

bool utf8_is_valid(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *) s;

        for (size_t i = 0; i < len;) {
                size_t n = sequence_length(p + i, len - i);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

int utf8_sanitize(const char *s, size_t len, char **ret, size_t *ret_len) {
        const unsigned char *p = (const unsigned char *) s;
        static const char replacement[] = "\xef\xbf\xbd";
        char *out;
        size_t o = 0;

        if (len > (SIZE_MAX - 1) / 3)
                return -ENOMEM;
        out = malloc(len * 3 + 1); /* worst case: every byte becomes U+FFFD */
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len;) {
                size_t n = sequence_length(p + i, len - i);
                if (n == 0) {
                        memcpy(out + o, replacement, 3);
                        o += 3;
                        i++;
                } else {
                        memcpy(out + o, p + i, n);
                        o += n;
                        i += n;
                }
        }
        out[o] = '\0';
        *ret = out;
        *ret_len = o;
        return 0;
}
