/* socks5: see socks5.h. */

#include "socks5.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "common/cleanup.h"

enum {
        CMD_CONNECT = 1,
        ATYP_IPV4 = 1,
        ATYP_NAME = 3,
        ATYP_IPV6 = 4,
        METHOD_NONE = 0,
};

const uint8_t *socks5_greeting(size_t *ret_len) {
        static const uint8_t greeting[] = { SOCKS5_VERSION, 1, METHOD_NONE };

        *ret_len = sizeof(greeting);
        return greeting;
}

ssize_t socks5_format_request(const char *host, uint16_t port, uint8_t buf[static SOCKS5_REQUEST_MAX]) {
        size_t len = 0, n = strlen(host);
        struct in6_addr in6;
        struct in_addr in;

        buf[len++] = SOCKS5_VERSION;
        buf[len++] = CMD_CONNECT;
        buf[len++] = 0; /* reserved */
        if (inet_pton(AF_INET, host, &in) == 1) {
                buf[len++] = ATYP_IPV4;
                memcpy(buf + len, &in, 4);
                len += 4;
        } else if (inet_pton(AF_INET6, host, &in6) == 1) {
                buf[len++] = ATYP_IPV6;
                memcpy(buf + len, &in6, 16);
                len += 16;
        } else {
                if (n > 255)
                        return -ENAMETOOLONG; /* host names are 253 bytes at most: not reached */
                buf[len++] = ATYP_NAME;
                buf[len++] = (uint8_t) n;
                memcpy(buf + len, host, n);
                len += n;
        }
        buf[len++] = (uint8_t) (port >> 8);
        buf[len++] = (uint8_t) (port & 0xff);
        return (ssize_t) len;
}

int socks5_parse_method(const uint8_t *p, size_t len) {
        if (len < 2)
                return 0;
        if (p[0] != SOCKS5_VERSION || p[1] != METHOD_NONE)
                return -EACCES;
        return 2;
}

ssize_t socks5_parse_reply(const uint8_t *p, size_t len, uint8_t *ret_rep) {
        size_t need;

        /* VER REP RSV ATYP, then the bound address (its first byte is a name's length) and port */
        if (len < 5)
                return 0;
        if (p[0] != SOCKS5_VERSION)
                return -EBADMSG;
        if (p[1] != 0) {
                *ret_rep = p[1];
                return -ECONNREFUSED;
        }
        need = p[3] == ATYP_IPV4   ? 4 + 4 + 2
               : p[3] == ATYP_IPV6 ? 4 + 16 + 2
               : p[3] == ATYP_NAME ? 4 + 1 + (size_t) p[4] + 2
                                   : 0;
        if (need == 0)
                return -EBADMSG;
        if (len < need)
                return 0;
        return (ssize_t) need;
}

const char *socks5_reply_to_string(uint8_t rep) {
        static const char *const texts[] = {
                [1] = "general failure",       [2] = "connection not allowed by ruleset",
                [3] = "network unreachable",   [4] = "host unreachable",
                [5] = "connection refused",    [6] = "TTL expired",
                [7] = "command not supported", [8] = "address type not supported",
        };

        return rep < ELEMENTSOF(texts) && texts[rep] ? texts[rep] : "unknown error";
}
