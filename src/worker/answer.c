/* answer: see answer.h. */

#include "answer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/utf8.h"

#define ERROR_HEAD_UNKNOWN 1024U
#define PIECES 7
#define LITERAL(s) ((Piece){ (s), sizeof(s) - 1, false })

/* A piece of the text: literal JSON, or the bytes of a string that is escaped as it goes out. */
typedef struct Piece {
        const char *data;
        size_t len;
        bool escape;
} Piece;

struct Answer {
        char *stdout_text, *stderr_text, *error; /* owned */
        char tail[48];                           /* ","exit_code":N}} */
        Piece pieces[PIECES];
        uint64_t size;
        /* Where the next read begins: the piece, the offset in it, and the bytes of one escape that did
         * not fit into the last buffer. */
        uint64_t pos;
        size_t piece, offset;
        char pending[8];
        size_t pending_len, pending_off;
};

Answer *answer_free(Answer *a) {
        if (!a)
                return NULL;
        free(a->stdout_text);
        free(a->stderr_text);
        free(a->error);
        free(a);
        return NULL;
}

DEFINE_POINTER_CLEANUP(Answer *, answer_free);

/* The escape of the character at s (len > 0 bytes left) into out (room for 6), as json-c's
 * json_escape_str() writes it with JSON_C_TO_STRING_NOSLASHESCAPE; *ret_used is the input it took.
 * Returns the output's length. A byte that begins no valid UTF-8 sequence is U+FFFD. */
static size_t escape_one(const char *s, size_t len, char out[static 6], size_t *ret_used) {
        static const char hex[] = "0123456789abcdef";
        unsigned char c = (unsigned char) s[0];
        size_t n;

        *ret_used = 1;
        switch (c) {
        case '"':
        case '\\':
                out[0] = '\\';
                out[1] = (char) c;
                return 2;
        case '\b':
                memcpy(out, "\\b", 2);
                return 2;
        case '\f':
                memcpy(out, "\\f", 2);
                return 2;
        case '\n':
                memcpy(out, "\\n", 2);
                return 2;
        case '\r':
                memcpy(out, "\\r", 2);
                return 2;
        case '\t':
                memcpy(out, "\\t", 2);
                return 2;
        }
        if (c < 0x20) {
                memcpy(out, "\\u00", 4);
                out[4] = hex[c >> 4];
                out[5] = hex[c & 0xf];
                return 6;
        }
        if (c < 0x80) {
                out[0] = (char) c;
                return 1;
        }
        n = utf8_sequence_length(s, len);
        if (n == 0) {
                memcpy(out, "\xef\xbf\xbd", 3);
                return 3;
        }
        memcpy(out, s, n);
        *ret_used = n;
        return n;
}

static bool plain(unsigned char c) {
        return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static uint64_t escaped_size(const char *s, size_t len) {
        uint64_t size = 0;
        char out[6];

        for (size_t i = 0; i < len;) {
                size_t used;

                if (plain((unsigned char) s[i])) {
                        size++;
                        i++;
                        continue;
                }
                size += escape_one(s + i, len - i, out, &used);
                i += used;
        }
        return size;
}

int answer_error_cut(const char *error, size_t error_len, const char *stderr_text, size_t stderr_len,
                     char **ret, size_t *ret_len) {
        size_t head, tail_start, text_len = stderr_text ? strnlen(stderr_text, stderr_len) : 0;
        char marker[96];
        char *out;
        int m;

        /* result.c appends stderr as a C string: all of it, or what comes before its first NUL. */
        if (stderr_len > 0 && stderr_len <= error_len &&
            memcmp(error + error_len - stderr_len, stderr_text, stderr_len) == 0)
                head = error_len - stderr_len;
        else if (text_len > 0 && text_len <= error_len &&
                 memcmp(error + error_len - text_len, stderr_text, text_len) == 0)
                head = error_len - text_len;
        else
                head = error_len < ERROR_HEAD_UNKNOWN ? error_len : ERROR_HEAD_UNKNOWN;

        if (error_len - head <= ANSWER_ERROR_TAIL) {
                out = malloc(error_len + 1);
                if (!out)
                        return -ENOMEM;
                memcpy(out, error, error_len);
                out[error_len] = '\0';
                *ret = out;
                *ret_len = error_len;
                return 0;
        }
        tail_start = error_len - ANSWER_ERROR_TAIL;
        for (int i = 0; i < 3 && ((unsigned char) error[tail_start] & 0xc0) == 0x80; i++)
                tail_start++; /* a continuation byte: the tail begins with a whole character */
        m = snprintf(marker, sizeof(marker), "[%zu bytes cut: the error keeps the end of stderr]\n",
                     tail_start - head);
        if (m < 0 || (size_t) m >= sizeof(marker))
                return -EINVAL;
        out = malloc(head + (size_t) m + (error_len - tail_start) + 1);
        if (!out)
                return -ENOMEM;
        memcpy(out, error, head);
        memcpy(out + head, marker, (size_t) m);
        memcpy(out + head + m, error + tail_start, error_len - tail_start);
        *ret_len = head + (size_t) m + (error_len - tail_start);
        out[*ret_len] = '\0';
        *ret = out;
        return 0;
}

int answer_new_run(char *stdout_text, size_t stdout_len, char *stderr_text, size_t stderr_len,
                   const char *error, size_t error_len, int exit_code, Answer **ret) {
        _cleanup_(answer_freep) Answer *a = calloc(1, sizeof(Answer));
        size_t cut_len;
        int r;

        if (!a) {
                free(stdout_text);
                free(stderr_text);
                return -ENOMEM;
        }
        a->stdout_text = stdout_text;
        a->stderr_text = stderr_text;
        r = answer_error_cut(error ? error : "", error ? error_len : 0, stderr_text, stderr_len, &a->error,
                             &cut_len);
        if (r < 0)
                return r;
        (void) snprintf(a->tail, sizeof(a->tail), "\",\"exit_code\":%d}}", exit_code);

        /* clang-format off */
        a->pieces[0] = LITERAL("{\"code\":0,\"message\":\"success\",\"data\":{\"stdout\":\"");
        a->pieces[1] = (Piece){ stdout_text ? stdout_text : "", stdout_text ? stdout_len : 0, true };
        a->pieces[2] = LITERAL("\",\"stderr\":\"");
        a->pieces[3] = (Piece){ stderr_text ? stderr_text : "", stderr_text ? stderr_len : 0, true };
        a->pieces[4] = LITERAL("\",\"error\":\"");
        a->pieces[5] = (Piece){ a->error, cut_len, true };
        a->pieces[6] = (Piece){ a->tail, strlen(a->tail), false };
        /* clang-format on */
        for (size_t i = 0; i < PIECES; i++)
                a->size += a->pieces[i].escape ? escaped_size(a->pieces[i].data, a->pieces[i].len)
                                               : a->pieces[i].len;
        *ret = TAKE_PTR(a);
        return 0;
}

uint64_t answer_size(const Answer *a) {
        return a->size;
}

/* Copies from the current piece into buf (room for max > 0): a span of plain bytes at once, else one
 * escape, whose bytes that do not fit wait in pending. Returns the bytes written. */
static size_t piece_emit(Answer *a, char *buf, size_t max) {
        const Piece *p = &a->pieces[a->piece];
        const char *s = p->data + a->offset;
        size_t left = p->len - a->offset, n = 0, used, len;
        char out[6];

        if (!p->escape) {
                n = left < max ? left : max;
                memcpy(buf, s, n);
                a->offset += n;
                return n;
        }
        while (n < max && n < left && plain((unsigned char) s[n]))
                n++;
        if (n > 0) {
                memcpy(buf, s, n);
                a->offset += n;
                return n;
        }
        len = escape_one(s, left, out, &used);
        a->offset += used;
        n = len < max ? len : max;
        memcpy(buf, out, n);
        memcpy(a->pending, out + n, len - n);
        a->pending_len = len - n;
        a->pending_off = 0;
        return n;
}

ssize_t answer_read(Answer *a, uint64_t pos, char *buf, size_t max) {
        size_t done = 0;

        if (pos != a->pos)
                return -EINVAL;
        while (done < max) {
                if (a->pending_len > 0) {
                        size_t n = a->pending_len < max - done ? a->pending_len : max - done;

                        memcpy(buf + done, a->pending + a->pending_off, n);
                        a->pending_off += n;
                        a->pending_len -= n;
                        done += n;
                        continue;
                }
                if (a->piece >= PIECES)
                        break;
                if (a->offset >= a->pieces[a->piece].len) {
                        a->piece++;
                        a->offset = 0;
                        continue;
                }
                done += piece_emit(a, buf + done, max - done);
        }
        a->pos += done;
        return (ssize_t) done;
}
