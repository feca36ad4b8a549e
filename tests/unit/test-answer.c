/* test-answer: src/worker/answer.c, the streamed JSON of a run's answer and the error's cut. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "common/utf8.h"
#include "worker/answer.h"

static char *dup_len(const char *s, size_t len) {
        char *d = malloc(len + 1);

        assert_non_null(d);
        memcpy(d, s, len);
        d[len] = '\0';
        return d;
}

/* The whole text, read block bytes at a time. */
static char *read_all(Answer *a, size_t block, size_t *ret_len) {
        uint64_t size = answer_size(a), pos = 0;
        char *text = malloc(size + 1);
        ssize_t n;

        assert_non_null(text);
        while ((n = answer_read(a, pos, text + pos, size - pos < block ? size - pos : block)) > 0)
                pos += (uint64_t) n;
        assert_int_equal(n, 0);
        assert_int_equal(pos, size);
        assert_int_equal(answer_read(a, pos, text, block), 0); /* the end stays the end */
        text[size] = '\0';
        *ret_len = size;
        return text;
}

/* What api.c printed with json-c before answers were streamed. */
static char *json_c_text(const char *out, size_t out_len, const char *err, size_t err_len, const char *error,
                         int exit_code) {
        json_object *o = json_object_new_object(), *d = json_object_new_object();
        char *clean;
        size_t clean_len;
        char *text;

        assert_int_equal(utf8_sanitize(out, out_len, &clean, &clean_len), 0);
        json_object_object_add(d, "stdout", json_object_new_string_len(clean, (int) clean_len));
        free(clean);
        assert_int_equal(utf8_sanitize(err, err_len, &clean, &clean_len), 0);
        json_object_object_add(d, "stderr", json_object_new_string_len(clean, (int) clean_len));
        free(clean);
        json_object_object_add(d, "error", json_object_new_string(error));
        json_object_object_add(d, "exit_code", json_object_new_int(exit_code));
        json_object_object_add(o, "code", json_object_new_int(0));
        json_object_object_add(o, "message", json_object_new_string("success"));
        json_object_object_add(o, "data", d);
        text = strdup(
                json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return text;
}

static void test_same_text_as_json_c(void **state) {
        /* every byte value, quotes, backslashes, valid and invalid UTF-8, NUL */
        char out[600];
        static const char err[] =
                "Traceback\n\t\"x\" \\ \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 \xff\xe4\xb8 /\x7f";
        static const size_t blocks[] = { 1, 2, 3, 5, 7, 64, 65536 };
        static const char tail[] = "\xc3\xa9 and \xed\xa0\x80 and \xf4\x90\x80\x80 end";
        const size_t out_len = 256 + sizeof(tail) - 1;

        for (size_t i = 0; i < 256; i++)
                out[i] = (char) i;
        memcpy(out + 256, tail, sizeof(tail) - 1);
        for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
                Answer *a = NULL;
                char *expected = json_c_text(out, out_len, err, sizeof(err) - 1, "", 0), *text;
                size_t len;

                assert_int_equal(answer_new_run(dup_len(out, out_len), out_len,
                                                dup_len(err, sizeof(err) - 1), sizeof(err) - 1, "", 0, 0,
                                                &a),
                                 0);
                text = read_all(a, blocks[b], &len);
                assert_int_equal(len, strlen(expected));
                assert_string_equal(text, expected);
                free(text);
                free(expected);
                answer_free(a);
        }
}

static void test_reads_are_sequential(void **state) {
        Answer *a = NULL;
        char buf[16];

        assert_int_equal(answer_new_run(strdup("x"), 1, strdup(""), 0, "", 0, 0, &a), 0);
        assert_int_equal(answer_read(a, 5, buf, sizeof(buf)), -EINVAL);
        answer_free(a);
}

/* The run: 4 MiB - 1 of \x01 on each stream and exit 1. The answer was 75.5 MB; now the error
 * keeps only stderr's tail (ANSWER_ERROR_TAIL), and the text is made 64 KiB at a time. */
static void test_error_keeps_only_the_tail_of_stderr(void **state) {
        size_t n = (4U << 20) - 1, len, error_len;
        char *stream = malloc(n), *error, *text;
        const char *head = "process exited with code 1\n";
        Answer *a = NULL;

        assert_non_null(stream);
        memset(stream, '\x01', n);
        error_len = strlen(head) + n;
        error = malloc(error_len + 1);
        assert_non_null(error);
        memcpy(error, head, strlen(head));
        memcpy(error + strlen(head), stream, n);
        error[error_len] = '\0';

        assert_int_equal(
                answer_new_run(dup_len(stream, n), n, dup_len(stream, n), n, error, error_len, 1, &a), 0);
        /* both outputs escaped (6 bytes a byte), and an error of at most a few KiB */
        assert_true(answer_size(a) < 2 * 6 * (uint64_t) n + 6 * ANSWER_ERROR_TAIL + 1024);
        text = read_all(a, 65536, &len);
        {
                json_object *o = json_tokener_parse(text), *data, *e;
                const char *s;

                assert_non_null(o);
                assert_true(json_object_object_get_ex(o, "data", &data));
                assert_true(json_object_object_get_ex(data, "error", &e));
                s = json_object_get_string(e);
                assert_true(strncmp(s, "process exited with code 1\n[", 28) == 0);
                assert_non_null(strstr(s, " bytes cut: the error keeps the end of stderr]\n"));
                assert_int_equal(strlen(s) - (size_t) (strchr(s, ']') + 2 - s), ANSWER_ERROR_TAIL);
                assert_true(json_object_object_get_ex(data, "stderr", &e));
                assert_int_equal(json_object_get_string_len(e), (int) n); /* stderr itself is whole */
                json_object_put(o);
        }
        free(text);
        free(error);
        free(stream);
        answer_free(a);
}

/* An error of head + a stderr of n bytes ('a'..'z' over and over), cut. */
static char *cut_of(size_t n, size_t *ret_len, char **ret_stderr) {
        const char *head = "process exited with code 1\n";
        char *stderr_text = malloc(n), *error = malloc(strlen(head) + n), *out = NULL;

        assert_non_null(stderr_text);
        assert_non_null(error);
        for (size_t i = 0; i < n; i++)
                stderr_text[i] = (char) ('a' + i % 26);
        memcpy(error, head, strlen(head));
        memcpy(error + strlen(head), stderr_text, n);
        assert_int_equal(answer_error_cut(error, strlen(head) + n, stderr_text, n, &out, ret_len), 0);
        free(error);
        *ret_stderr = stderr_text;
        return out;
}

/* Dify shows the error, not stderr: a 64 KiB traceback, and one of exactly ANSWER_ERROR_TAIL bytes, reach
 * it whole; one byte more is cut to the last ANSWER_ERROR_TAIL. */
static void test_error_keeps_a_long_stderr_whole(void **state) {
        const char *head = "process exited with code 1\n",
                   *cut_head =
                           "process exited with code 1\n[1 bytes cut: the error keeps the end of stderr]\n";
        const size_t whole[] = { 64U * 1024U, ANSWER_ERROR_TAIL };
        char *out, *stderr_text, *s;
        size_t len, n = ANSWER_ERROR_TAIL + 1;

        assert_true(ANSWER_ERROR_TAIL >= 256U * 1024U);
        for (size_t k = 0; k < sizeof(whole) / sizeof(whole[0]); k++) {
                out = cut_of(whole[k], &len, &stderr_text);
                assert_int_equal(len, strlen(head) + whole[k]);
                assert_memory_equal(out + strlen(head), stderr_text, whole[k]);
                free(out);
                free(stderr_text);
        }

        out = cut_of(n, &len, &stderr_text);
        s = out + strlen(cut_head);
        assert_true(strncmp(out, cut_head, strlen(cut_head)) == 0);
        assert_int_equal(len - (size_t) (s - out), ANSWER_ERROR_TAIL);
        assert_memory_equal(s, stderr_text + 1, ANSWER_ERROR_TAIL);
        free(out);
        free(stderr_text);
}

static void test_error_cut_forms(void **state) {
        char *out = NULL, *stderr_text, *error;
        size_t len, n = ANSWER_ERROR_TAIL + 10000;

        /* short: kept whole */
        assert_int_equal(answer_error_cut("process exited with code 1\nboom\n", 32, "boom\n", 5, &out, &len),
                         0);
        assert_string_equal(out, "process exited with code 1\nboom\n");
        free(out);

        /* stderr with a NUL: result.c appended what came before it; the cut starts at a character */
        stderr_text = malloc(n + 2);
        for (size_t i = 0; i < n; i += 2)
                memcpy(stderr_text + i, "\xc3\xa9", 2);
        memcpy(stderr_text + n, "\0x", 2);
        error = malloc(n + 64);
        assert_non_null(stderr_text);
        assert_non_null(error);
        len = (size_t) sprintf(error, "process exited with code 1\nerror: timeout\n");
        memcpy(error + len, stderr_text, n);
        assert_int_equal(answer_error_cut(error, len + n, stderr_text, n + 2, &out, &len), 0);
        assert_true(strncmp(out, "process exited with code 1\nerror: timeout\n[", 43) == 0);
        assert_true(utf8_is_valid(out, len));
        assert_true(len < ANSWER_ERROR_TAIL + 200);
        free(out);
        free(error);

        /* an error of another form: its first 1 KiB and its last bytes */
        error = malloc(n);
        memset(error, 'e', n);
        assert_int_equal(answer_error_cut(error, n, "zzz", 3, &out, &len), 0);
        assert_true(len < 1024 + ANSWER_ERROR_TAIL + 100);
        assert_non_null(strstr(out, " bytes cut"));
        assert_true(len > ANSWER_ERROR_TAIL); /* its first 1 KiB, then its end */
        free(out);
        free(error);
        free(stderr_text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_same_text_as_json_c),
                cmocka_unit_test(test_reads_are_sequential),
                cmocka_unit_test(test_error_keeps_only_the_tail_of_stderr),
                cmocka_unit_test(test_error_keeps_a_long_stderr_whole),
                cmocka_unit_test(test_error_cut_forms),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
