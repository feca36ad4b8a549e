/* libFuzzer target: a request head as the egress relay reads it from a run (CONNECT, or a plain request
 * with an absolute http:// URL), through the relay's own parser. Runs are untrusted: a crash, leak or UB is
 * a finding. The SOCKS5 side parses only the upstream proxy's replies inside the relay's state machine and
 * is not reached from here. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sandbox/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The relay hands over a head that ends with its empty line and holds at most 16K. */
        if (size > 16384)
                return 0;
        (void) egress_request_check(data, size);
        return 0;
}
