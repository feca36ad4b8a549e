#pragma once
/* answer: owns the JSON text of a run's answer (DESIGN §1), made piece by piece while libmicrohttpd sends
 * it, so that a worker never holds more than the run's two outputs and a small buffer: JSON escapes make a
 * control byte six bytes (\u0001), and the whole text built at once was six times both outputs, twice
 * over while it was copied; eight clients that did not read such answers held a gigabyte. The text is
 * the one json-c printed before: the same keys in the same order, the same escapes, invalid UTF-8 as
 * U+FFFD (as Go's encoder does for upstream). Non-logging. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Answer Answer;

/* The most of stderr the error keeps (its end), and the most an error of another form keeps whole. Upstream
 * puts the whole stderr in the error, and Dify shows the error, never our stderr key, to its user: a long
 * chained traceback or a warning in a loop (64 KiB is not unusual) must reach that user whole. 256 KiB
 * keeps such a stderr whole, and is what a worker holds beyond the two outputs while its answer waits. */
#define ANSWER_ERROR_TAIL (256U * 1024U)

/* {"code":0,"message":"success","data":{"stdout":…,"stderr":…,"error":…,"exit_code":N}}. Takes
 * stdout_text and stderr_text (malloc()ed; freed with the answer, or at once on failure); error is copied,
 * cut by answer_error_cut(). */
int answer_new_run(char *stdout_text, size_t stdout_len, char *stderr_text, size_t stderr_len,
                   const char *error, size_t error_len, int exit_code, Answer **ret);
Answer *answer_free(Answer *a); /* NULL-safe, returns NULL */

uint64_t answer_size(const Answer *a); /* bytes of the whole text */
/* The next at most max bytes of the text into buf, which begin at pos (the bytes read so far: reads are
 * sequential). Returns how many (0 at the end), or -EINVAL for another pos. */
ssize_t answer_read(Answer *a, uint64_t pos, char *buf, size_t max);

/* The API's error: on a non-zero exit the runner's is "process exited with code N", the classification
 * lines, then the whole stderr, which the answer holds already. The copy keeps everything before stderr
 * and stderr's last ANSWER_ERROR_TAIL bytes (from a character's start), with a line saying how much was
 * cut; an error that does not end with stderr keeps its first 1 KiB and its last ANSWER_ERROR_TAIL bytes
 * alike. NUL-terminated, malloc()ed. */
int answer_error_cut(const char *error, size_t error_len, const char *stderr_text, size_t stderr_len,
                     char **ret, size_t *ret_len);
