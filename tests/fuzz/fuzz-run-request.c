/* libFuzzer target: the body of POST /v1/sandbox/run, parsed and bound as api.c does (JSON, UTF-8, fields,
 * language), without running anything. Any answer is fine; a crash, leak or UB is a finding. An answer
 * that is not a 400 envelope, or a refusal without one, is one too. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ApiResponse resp = { 0 };
        char *body;
        int r;

        body = malloc(size + 1); /* api.h: NUL-terminated after its length */
        if (!body)
                return 0;
        memcpy(body, data, size);
        body[size] = '\0';
        r = api_run_body_check(body, size, &resp);
        if (r == 1 && (resp.status != 400 || !resp.body))
                abort();
        if (r == 0 && resp.body)
                abort();
        api_response_done(&resp);
        free(body);
        return 0;
}
