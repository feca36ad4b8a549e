#pragma once
/* socks5: the client side of SOCKS5 (RFC 1928) as the egress relay (relay.c) speaks it to an upstream
 * proxy.socks5: no authentication, CONNECT only, the destination's name sent as it is (ATYP 3) so the proxy
 * resolves it. Builds the messages and parses the proxy's answers, which are untrusted; no I/O, never
 * logs. Only src/egress uses it. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SOCKS5_VERSION 5
#define SOCKS5_REQUEST_MAX (4U + 1U + 255U + 2U)
#define SOCKS5_REP_NOT_ALLOWED 2 /* "connection not allowed by ruleset": the run gets a 403 */

/* The greeting: version 5, one method, "no authentication". Constant data; *ret_len is its length. */
const uint8_t *socks5_greeting(size_t *ret_len);

/* The CONNECT request for host (an IP literal goes as itself, a name as ATYP 3) and port into buf.
 * Returns its length, or -ENAMETOOLONG for a name longer than 255 bytes. */
ssize_t socks5_format_request(const char *host, uint16_t port, uint8_t buf[static SOCKS5_REQUEST_MAX]);

/* The proxy's method choice (len bytes so far): 2, the bytes it takes, when it accepts no authentication;
 * 0 while incomplete; -EACCES when it wants another method (or is no SOCKS5 proxy). */
int socks5_parse_method(const uint8_t *p, size_t len);

/* The proxy's reply to CONNECT (len bytes so far): its length when it succeeded; 0 while incomplete;
 * -ECONNREFUSED with *ret_rep set when the proxy refused (socks5_reply_to_string() says why); -EBADMSG when
 * malformed. */
ssize_t socks5_parse_reply(const uint8_t *p, size_t len, uint8_t *ret_rep);

/* The words of RFC 1928 for a refusal code; "unknown error" for others. */
const char *socks5_reply_to_string(uint8_t rep);
