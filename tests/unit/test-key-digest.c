/* Unit tests for src/config/key-digest.c: SHA-256 gives FIPS 180-4's and NIST's answers, a digest
 * matches its key and nothing else, and a malformed digest matches nothing. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/key-digest.h"

static void check_sha256(const void *data, size_t len, const char *want) {
        uint8_t d[SHA256_SIZE];
        char got[2 * SHA256_SIZE + 1];

        sha256(data, len, d);
        for (size_t i = 0; i < SHA256_SIZE; i++)
                (void) snprintf(got + 2 * i, 3, "%02x", d[i]);
        assert_string_equal(got, want);
}

static void test_sha256_known_answers(void **state) {
        char *million = malloc(1000000);

        check_sha256("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        check_sha256("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        /* 56 bytes: the length no longer fits the first block's padding */
        check_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
                     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        assert_non_null(million);
        memset(million, 'a', 1000000);
        check_sha256(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(million);
}

static void test_a_digest_matches_its_key_only(void **state) {
        char d[KEY_DIGEST_TEXT_SIZE], e[KEY_DIGEST_TEXT_SIZE];

        assert_int_equal(key_digest_make("the-api-key", d), 0);
        assert_true(key_digest_valid(d));
        assert_null(strstr(d, "the-api-key"));
        assert_true(key_digest_matches(d, "the-api-key"));
        assert_false(key_digest_matches(d, "the-api-kex"));
        assert_false(key_digest_matches(d, "the-api-key "));
        assert_false(key_digest_matches(d, "the-api-ke"));
        assert_false(key_digest_matches(d, ""));
        assert_false(key_digest_matches(d, NULL));
        /* a new salt each time: two digests of one key differ, and both match it */
        assert_int_equal(key_digest_make("the-api-key", e), 0);
        assert_string_not_equal(d, e);
        assert_true(key_digest_matches(e, "the-api-key"));
}

static void test_a_malformed_digest_matches_nothing(void **state) {
        char d[KEY_DIGEST_TEXT_SIZE];
        const char *bad[] = { "", "the-api-key", "sha256:", "sha1:00", NULL };

        assert_int_equal(key_digest_make("k", d), 0);
        for (size_t i = 0; bad[i]; i++) {
                assert_false(key_digest_valid(bad[i]));
                assert_false(key_digest_matches(bad[i], bad[i]));
        }
        d[10] = 'G'; /* not hex */
        assert_false(key_digest_valid(d));
        assert_false(key_digest_matches(d, "k"));
        assert_false(key_digest_matches(NULL, "k"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sha256_known_answers),
                cmocka_unit_test(test_a_digest_matches_its_key_only),
                cmocka_unit_test(test_a_malformed_digest_matches_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
