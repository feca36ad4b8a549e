/* libFuzzer target: a request head as the egress relay reads it from a run (CONNECT, or a plain request
 * with an absolute http:// URL), through the relay's own parser. Runs are untrusted: a crash, leak or UB is
 * a finding. The SOCKS5 side (src/egress/socks5.c) parses only the upstream proxy's replies and is not
 * reached from here. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/http-head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The relay hands over a head that ends with its empty line and holds at most 16K. */
        const char *reason = NULL;
        HttpRequest req;

        if (size > HTTP_HEAD_MAX)
                return 0;
        if (http_head_parse_request(data, size, &req, &reason) >= 0)
                http_head_request_done(&req);
        return 0;
}
