#pragma once
/* http-head: the HTTP/1.x heads the egress relay (relay.c) reads: a run's request (CONNECT host:port, or a
 * plain request with an absolute http:// URL), which is untrusted input, and the status line of an upstream
 * HTTP proxy's answer to CONNECT. Also the "host:port" authorities both of them and the proxy URLs
 * (upstream.c) carry. Pure parsing: no I/O, never logs. Only src/egress and tests/fuzz use it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HEAD_MAX (16U * 1024U) /* a request head, and an upstream proxy's answer */
#define HTTP_HEAD_STATUS_SHOWN 120U /* bytes of an upstream proxy's status line quoted in a reason */

typedef struct HttpRequest {
        bool tunnel; /* CONNECT */
        char *method;
        unsigned minor; /* HTTP/1.minor */
        char *host;     /* IPv6 without brackets */
        uint16_t port;
        char *path;    /* origin-form, plain requests */
        char *headers; /* the client's header lines that are forwarded, each with its CRLF */
} HttpRequest;

/* The length of the head at p (up to and with its empty line; LF or CRLF line ends), or 0 while the empty
 * line has not arrived. */
size_t http_head_end(const uint8_t *p, size_t len);

/* Parses a request head (len bytes, up to and with its empty line): CONNECT host:port, or a plain request
 * whose target is an absolute http:// URL; HTTP/1.0 or 1.1 only. The hop-by-hop headers and those the relay
 * sets itself (Connection, Host, Keep-Alive, Proxy-Authorization, Proxy-Connection) are dropped from
 * headers. Returns 0, -EBADMSG with *reterr_reason saying what is malformed (for the 400 answer), or
 * -ENOMEM. *ret is set only on success; free it with http_head_request_done(). */
int http_head_parse_request(const uint8_t *head, size_t len, HttpRequest *ret, const char **reterr_reason);
void http_head_request_done(HttpRequest *req);

/* The status code of an upstream proxy's answer head (end bytes, as http_head_end() measured it), 0 when
 * its status line is not "HTTP/1.x NNN"; shown gets the status line, printable ASCII only (others are '?'),
 * cut at HTTP_HEAD_STATUS_SHOWN bytes, for the reason the run is given. */
unsigned http_head_parse_status(const uint8_t *p, size_t end, char shown[static HTTP_HEAD_STATUS_SHOWN + 1]);

/* "host[:port]" or "[v6][:port]" (len bytes of s): the host is an IP literal or a valid host name, the port
 * 1-65535, required when default_port is 0. Returns 0, -EBADMSG, or -ENOMEM. */
int http_head_parse_authority(const char *s, size_t len, uint16_t default_port, char **ret_host,
                              uint16_t *ret_port);

/* "host:port", IPv6 in brackets, or without ":port": the authority of a CONNECT and of a Host header.
 * NULL when out of memory. */
char *http_head_format_authority(const char *host, uint16_t port, bool with_port);
