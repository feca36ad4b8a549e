/* key-digest: see key-digest.h. SHA-256 as FIPS 180-4 §6.2 states it. */

#include "key-digest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "common/cleanup.h"

#define PREFIX "sha256:"

static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) {
        return (x >> n) | (x << (32 - n));
}

static void block(uint32_t h[8], const uint8_t p[64]) {
        uint32_t w[64], v[8];

        for (unsigned t = 0; t < 16; t++)
                w[t] = (uint32_t) p[4 * t] << 24 | (uint32_t) p[4 * t + 1] << 16 |
                       (uint32_t) p[4 * t + 2] << 8 | (uint32_t) p[4 * t + 3];
        for (unsigned t = 16; t < 64; t++) {
                uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
                uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
                w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        memcpy(v, h, sizeof(v));
        for (unsigned t = 0; t < 64; t++) {
                uint32_t S1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
                uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
                uint32_t t1 = v[7] + S1 + ch + K[t] + w[t];
                uint32_t S0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
                uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
                uint32_t t2 = S0 + maj;

                memmove(v + 1, v, 7 * sizeof(uint32_t));
                v[4] += t1;
                v[0] = t1 + t2;
        }
        for (unsigned i = 0; i < 8; i++)
                h[i] += v[i];
        explicit_bzero(w, sizeof(w));
        explicit_bzero(v, sizeof(v));
}

void sha256(const void *data, size_t len, uint8_t ret[SHA256_SIZE]) {
        uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
        const uint8_t *p = data;
        uint8_t last[128] = { 0 };
        size_t rest = len % 64, tail_len = rest < 56 ? 64 : 128;
        uint64_t bits = (uint64_t) len * 8;

        for (size_t i = 0; i + 64 <= len; i += 64)
                block(h, p + i);
        memcpy(last, p + len - rest, rest);
        last[rest] = 0x80;
        for (unsigned i = 0; i < 8; i++)
                last[tail_len - 1 - i] = (uint8_t) (bits >> (8 * i));
        block(h, last);
        if (tail_len == 128)
                block(h, last + 64);
        for (unsigned i = 0; i < 8; i++)
                for (unsigned b = 0; b < 4; b++)
                        ret[4 * i + b] = (uint8_t) (h[i] >> (24 - 8 * b));
        explicit_bzero(last, sizeof(last));
}

/* SHA-256 of salt, then key. */
static int salted(const uint8_t salt[KEY_DIGEST_SALT_SIZE], const char *key, uint8_t ret[SHA256_SIZE]) {
        size_t n = strlen(key);
        _cleanup_free_ uint8_t *buf = malloc(KEY_DIGEST_SALT_SIZE + n);

        if (!buf)
                return -ENOMEM;
        memcpy(buf, salt, KEY_DIGEST_SALT_SIZE);
        memcpy(buf + KEY_DIGEST_SALT_SIZE, key, n);
        sha256(buf, KEY_DIGEST_SALT_SIZE + n, ret);
        explicit_bzero(buf, KEY_DIGEST_SALT_SIZE + n);
        return 0;
}

static void hex(const uint8_t *p, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
}

static int unhex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

static bool unhex(const char *s, size_t n, uint8_t *out) {
        for (size_t i = 0; i < n; i++) {
                int hi = unhex_digit(s[2 * i]), lo = hi < 0 ? -1 : unhex_digit(s[2 * i + 1]);
                if (lo < 0)
                        return false;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        return true;
}

int key_digest_make(const char *key, char ret[KEY_DIGEST_TEXT_SIZE]) {
        uint8_t salt[KEY_DIGEST_SALT_SIZE], d[SHA256_SIZE];
        char *p = ret;
        int r;

        if (getrandom(salt, sizeof(salt), 0) != (ssize_t) sizeof(salt))
                return -errno;
        r = salted(salt, key, d);
        if (r < 0)
                return r;
        memcpy(p, PREFIX, strlen(PREFIX));
        p += strlen(PREFIX);
        hex(salt, sizeof(salt), p);
        p += 2 * sizeof(salt);
        *p++ = ':';
        hex(d, sizeof(d), p);
        p += 2 * sizeof(d);
        *p = '\0';
        return 0;
}

/* The salt and digest of text, or false. */
static bool parse(const char *text, uint8_t salt[KEY_DIGEST_SALT_SIZE], uint8_t d[SHA256_SIZE]) {
        if (!text || strlen(text) != KEY_DIGEST_TEXT_SIZE - 1 || strncmp(text, PREFIX, strlen(PREFIX)) != 0)
                return false;
        text += strlen(PREFIX);
        if (text[2 * KEY_DIGEST_SALT_SIZE] != ':')
                return false;
        return unhex(text, KEY_DIGEST_SALT_SIZE, salt) &&
               unhex(text + 2 * KEY_DIGEST_SALT_SIZE + 1, SHA256_SIZE, d);
}

bool key_digest_valid(const char *text) {
        uint8_t salt[KEY_DIGEST_SALT_SIZE], d[SHA256_SIZE];

        return parse(text, salt, d);
}

bool key_digest_matches(const char *text, const char *given) {
        uint8_t salt[KEY_DIGEST_SALT_SIZE], want[SHA256_SIZE], got[SHA256_SIZE];
        unsigned char diff = 0;

        if (!given || !parse(text, salt, want))
                return false;
        if (salted(salt, given, got) < 0)
                return false;
        for (size_t i = 0; i < SHA256_SIZE; i++) /* every byte, whatever the first difference */
                diff |= want[i] ^ got[i];
        return diff == 0;
}
