#pragma once
/* key-digest: what a worker holds of app.key instead of the key (issue 43): a random salt and the SHA-256
 * of salt and key, made by the runner for the workers it configures and by a worker from its own
 * --config file. A worker checks a request's X-Api-Key against it in time that does not depend on the
 * key, and a worker taken over by its client finds no key in its memory to reuse elsewhere; it could still
 * guess a weak key offline against the digest, as anyone could against any verifier, so app.key should be
 * long and random. The SHA-256 is FIPS 180-4's, written here (no library of ours has one). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEY_DIGEST_SALT_SIZE 16U
#define SHA256_SIZE 32U
/* "sha256:" 32 hex digits of salt ":" 64 hex digits of digest, and the NUL */
#define KEY_DIGEST_TEXT_SIZE (7U + 2U * KEY_DIGEST_SALT_SIZE + 1U + 2U * SHA256_SIZE + 1U)

void sha256(const void *data, size_t len, uint8_t ret[SHA256_SIZE]);

/* The digest of key under a new random salt, as text ("sha256:SALT:DIGEST", lower-case hex), into ret
 * (KEY_DIGEST_TEXT_SIZE bytes). Returns 0 or a negative errno (getrandom()). */
int key_digest_make(const char *key, char ret[KEY_DIGEST_TEXT_SIZE]);

/* Whether text is a digest key_digest_make() made. */
bool key_digest_valid(const char *text);

/* Whether given (NULL: none) is the key whose digest text is. A text that is not valid matches nothing.
 * The comparison of the two digests takes the same time wherever they differ. */
bool key_digest_matches(const char *text, const char *given);
