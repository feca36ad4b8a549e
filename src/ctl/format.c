/* format: see format.h. */

#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "common/parse.h"
#include "common/time-util.h"
#include "common/utf8.h"

#define USEC_PER_DAY (24 * USEC_PER_HOUR)

#define PROGRESS_BAR_WIDTH 20
#define PROGRESS_LOG_MIN 8 /* fewer cells than this for the log line: leave it out */

char *format_timespan(char buf[static FORMAT_TIMESPAN_MAX], uint64_t usec) {
        /* clang-format off */
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "d",   USEC_PER_DAY    },
                { "h",   USEC_PER_HOUR   },
                { "min", USEC_PER_MINUTE },
                { "s",   USEC_PER_SEC    },
        };
        /* clang-format on */

        if (usec < USEC_PER_MSEC)
                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "us", usec);
        else if (usec < USEC_PER_SEC)
                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else if (usec < 10 * USEC_PER_SEC)
                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 ".%" PRIu64 "s", usec / USEC_PER_SEC,
                                usec % USEC_PER_SEC / (USEC_PER_SEC / 10));
        else
                for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                        uint64_t major = usec / units[i].usec, minor;

                        if (major == 0)
                                continue;
                        if (i + 1 == ELEMENTSOF(units)) {
                                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "%s", major,
                                                units[i].suffix);
                                break;
                        }
                        minor = usec % units[i].usec / units[i + 1].usec;
                        if (minor == 0)
                                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "%s", major,
                                                units[i].suffix);
                        else
                                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 "%s %" PRIu64 "%s",
                                                major, units[i].suffix, minor, units[i + 1].suffix);
                        break;
                }
        return buf;
}

char *format_timestamp(char buf[static FORMAT_TIMESTAMP_MAX], uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (realtime_usec == 0 || !localtime_r(&t, &tm) ||
            strftime(buf, FORMAT_TIMESTAMP_MAX, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                (void) snprintf(buf, FORMAT_TIMESTAMP_MAX, "n/a");
        return buf;
}

/* Elapsed time of a job on its progress line: "0:07", "12:34", "1:02:03". */
static char *format_elapsed(char buf[static FORMAT_TIMESPAN_MAX], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s >= 3600)
                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, s / 3600,
                                s / 60 % 60, s % 60);
        else
                (void) snprintf(buf, FORMAT_TIMESPAN_MAX, "%" PRIu64 ":%02" PRIu64, s / 60, s % 60);
        return buf;
}

unsigned format_columns(int fd) {
        struct winsize ws = { 0 };
        const char *e;
        uint32_t n;

        if (ioctl(fd, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0)
                return ws.ws_col;
        e = getenv("COLUMNS");
        if (e && parse_uint32(e, &n) >= 0 && n > 0 && n <= 10000)
                return n;
        return 80;
}

/* Text that is safe to show on a terminal within columns cells: control characters (escape
 * sequences, \r, tabs) become spaces, what the locale cannot decode becomes '?', and text that is too
 * wide is cut and ends in "...". *ret_width is the number of cells used. Returns 0 or -ENOMEM. */
static int format_fit(const char *s, size_t len, size_t columns, char **ret, size_t *ret_width) {
        _cleanup_free_ char *out = NULL;
        mbstate_t state = { 0 };
        size_t o = 0, width = 0, cut_o = 0, cut_width = 0;
        bool cut = false;

        /* Each input byte gives at most one output byte ('?' or ' ' replace at least one), plus "...". */
        out = malloc(len + 4);
        if (!out)
                return -ENOMEM;

        for (size_t i = 0; i < len;) {
                wchar_t wc;
                size_t n = mbrtowc(&wc, s + i, len - i, &state);
                int w;

                if (n == (size_t) -1 || n == (size_t) -2 || n == 0) { /* undecodable, cut short, or NUL */
                        memset(&state, 0, sizeof(state));
                        n = 1;
                        wc = L'?';
                } else if (wc < 0x20 || (wc >= 0x7f && wc < 0xa0))
                        wc = L' '; /* C0/C1 controls: nothing may move the cursor or start a sequence */
                w = wc == L'?' || wc == L' ' ? 1 : wcwidth(wc);
                if (w < 0) {
                        wc = L'?';
                        w = 1;
                }

                /* Remember where "..." would have to go, then stop at the first character that overflows. */
                if (width + (size_t) w + 3 <= columns) {
                        cut_o = o + (wc == L'?' || wc == L' ' ? 1 : n);
                        cut_width = width + (size_t) w;
                }
                if (width + (size_t) w > columns) {
                        cut = true;
                        break;
                }
                if (wc == L'?' || wc == L' ')
                        out[o++] = (char) wc;
                else {
                        memcpy(out + o, s + i, n);
                        o += n;
                }
                width += (size_t) w;
                i += n;
        }

        if (cut) {
                if (columns < 3) {
                        o = 0;
                        width = 0;
                } else {
                        memcpy(out + cut_o, "...", 3);
                        o = cut_o + 3;
                        width = cut_width + 3;
                }
        }
        out[o] = '\0';
        *ret = TAKE_PTR(out);
        if (ret_width)
                *ret_width = width;
        return 0;
}

const char *format_last_line(const char *log, size_t len, size_t *ret_len) {
        size_t end = len;

        if (!log)
                return NULL;
        for (;;) {
                size_t start;

                while (end > 0 && (log[end - 1] == '\n' || log[end - 1] == '\r'))
                        end--;
                if (end == 0)
                        return NULL;
                start = end;
                while (start > 0 && log[start - 1] != '\n')
                        start--;
                /* a line of blanks says nothing: look further up */
                for (size_t i = start; i < end; i++)
                        if (log[i] != ' ' && log[i] != '\t' && log[i] != '\r') {
                                *ret_len = end - start;
                                return log + start;
                        }
                end = start;
        }
}

int format_progress_line(double progress, const char *log_line, size_t log_line_len, uint64_t elapsed_usec,
                         unsigned columns, char **ret) {
        _cleanup_free_ char *text = NULL, *line = NULL;
        char elapsed[FORMAT_TIMESPAN_MAX], bar[PROGRESS_BAR_WIDTH + 1];
        size_t avail, filled, text_width = 0, prefix, used;
        unsigned percent;
        int r;

        if (!(progress >= 0.0)) /* NaN too */
                progress = 0.0;
        if (progress > 1.0)
                progress = 1.0;
        percent = (unsigned) (progress * 100.0);
        filled = (size_t) (progress * PROGRESS_BAR_WIDTH);
        memset(bar, '#', filled);
        memset(bar + filled, '-', PROGRESS_BAR_WIDTH - filled);
        bar[PROGRESS_BAR_WIDTH] = '\0';
        (void) format_elapsed(elapsed, elapsed_usec);

        /* "100% [bar] " + text + pad + " " + elapsed, in columns - 1 cells */
        prefix = strlen("100% [] ") + PROGRESS_BAR_WIDTH;
        used = prefix + 1 + strlen(elapsed);
        avail = columns > used + 1 ? columns - 1 - used : 0;

        if (avail >= PROGRESS_LOG_MIN && log_line) {
                r = format_fit(log_line, log_line_len, avail, &text, &text_width);
                if (r < 0)
                        return r;
        }
        if (columns > used)
                r = asprintf(&line, "%3u%% [%s] %s%*s %s", percent, bar, text ? text : "",
                             (int) (avail - text_width), "", elapsed);
        else
                r = asprintf(&line, "%3u%% %s", percent, elapsed);
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(line);
        return 0;
}

json_object *format_json_string(const char *text, size_t len) {
        _cleanup_free_ char *clean = NULL;
        size_t clean_len;

        if (!text)
                return json_object_new_string("");
        if (utf8_is_valid(text, len))
                return json_object_new_string_len(text, (int) len);
        if (utf8_sanitize(text, len, &clean, &clean_len) < 0)
                return NULL;
        return json_object_new_string_len(clean, (int) clean_len);
}

int format_json_print(json_object *o) {
        const char *s =
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return -ENOMEM;
        if (puts(s) < 0 || fflush(stdout) != 0)
                return -EIO;
        return 0;
}
