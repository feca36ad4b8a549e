/* parse: see parse.h. */

#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parses the leading digits of s; *ret_end points after them. Refuses signs and leading spaces, which
 * strtoull() would silently accept ("-1" becomes 2^64-1). */
static int parse_digits(const char *s, uint64_t *ret, const char **ret_end) {
        uint64_t v = 0;
        const char *p = s;

        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                unsigned d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        *ret_end = p;
        return 0;
}

int parse_uint64(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r;

        r = parse_digits(s, &v, &end);
        if (r < 0)
                return r;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_uint32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r;

        r = parse_uint64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } units[] = {
                { "", 1ULL },          { "B", 1ULL },         { "K", 1ULL << 10 },   { "KB", 1ULL << 10 },
                { "KiB", 1ULL << 10 }, { "M", 1ULL << 20 },   { "MB", 1ULL << 20 },  { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 },   { "GB", 1ULL << 30 },  { "GiB", 1ULL << 30 }, { "T", 1ULL << 40 },
                { "TB", 1ULL << 40 },  { "TiB", 1ULL << 40 },
        };
        const char *end;
        uint64_t v;
        int r;

        r = parse_digits(s, &v, &end);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcmp(end, units[i].suffix) != 0)
                        continue;
                if (v > UINT64_MAX / units[i].factor)
                        return -ERANGE;
                *ret = v * units[i].factor;
                return 0;
        }
        return -EINVAL;
}

int parse_duration(const char *s, uint64_t *ret_usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "", 1000000ULL },  { "s", 1000000ULL }, { "sec", 1000000ULL },  { "ms", 1000ULL },
                { "msec", 1000ULL }, { "us", 1ULL },      { "min", 60000000ULL },
        };
        const char *end;
        uint64_t whole, frac = 0, frac_div = 1;
        int r;

        r = parse_digits(s, &whole, &end);
        if (r < 0)
                return r;
        if (*end == '.') {
                end++;
                if (!isdigit((unsigned char) *end))
                        return -EINVAL;
                for (; isdigit((unsigned char) *end); end++)
                        if (frac_div < 1000000ULL) { /* digits past microseconds are dropped */
                                frac = frac * 10 + (uint64_t) (*end - '0');
                                frac_div *= 10;
                        }
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcmp(end, units[i].suffix) != 0)
                        continue;
                uint64_t base, part;
                if (whole > UINT64_MAX / units[i].usec)
                        return -ERANGE;
                base = whole * units[i].usec;
                part = frac * units[i].usec / frac_div; /* frac < frac_div <= 10^6: no overflow */
                if (part > UINT64_MAX - base)
                        return -ERANGE;
                *ret_usec = base + part;
                return 0;
        }
        return -EINVAL;
}

int parse_percent(const char *s, uint32_t *ret) {
        const char *end;
        uint64_t v;
        int r;

        r = parse_digits(s, &v, &end);
        if (r < 0)
                return r;
        if (strcmp(end, "%") != 0)
                return -EINVAL;
        if (v < 1 || v > 100000)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

int parse_boolean(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}
