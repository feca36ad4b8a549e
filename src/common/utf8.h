#pragma once
/* utf8: validation and repair of UTF-8 text from untrusted sources (request bodies, a run's output).
 * What a run prints is bytes; what the API returns is JSON text, so invalid sequences become U+FFFD,
 * as Go's encoding/json does for upstream. */

#include <stdbool.h>
#include <stddef.h>

/* The length of the valid UTF-8 sequence at s (at most len > 0 bytes), or 0 when it is invalid: what
 * utf8_sanitize() replaces, one byte at a time. */
size_t utf8_sequence_length(const char *s, size_t len);

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF). NUL bytes are valid. */
bool utf8_is_valid(const char *s, size_t len);

/* A malloc()ed copy of s with every invalid sequence replaced by U+FFFD, NUL-terminated (it may hold
 * NUL bytes too: *ret_len is its length). */
int utf8_sanitize(const char *s, size_t len, char **ret, size_t *ret_len);
