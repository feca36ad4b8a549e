/* http-head: see http-head.h. */

#include "http-head.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "common/parse.h"
#include "egress-policy.h"

#define METHOD_MAX 32U

static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

size_t http_head_end(const uint8_t *p, size_t len) {
        for (size_t i = 0; i + 1 < len; i++) {
                if (p[i] != '\n')
                        continue;
                if (p[i + 1] == '\n')
                        return i + 2;
                if (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
                        return i + 3;
        }
        return 0;
}

/* "[v6]" or "[v6]:port" in copy: the host, and where the port text starts (or NULL). */
static int authority_parse_bracketed(char *copy, char **ret_host, const char **ret_port_text) {
        _cleanup_free_ char *host = NULL;
        char *close = strchr(copy, ']');
        struct in6_addr in6;

        if (!close || (close[1] != '\0' && close[1] != ':'))
                return -EBADMSG;
        host = strndup(copy + 1, (size_t) (close - copy - 1));
        if (!host)
                return -ENOMEM;
        if (inet_pton(AF_INET6, host, &in6) != 1)
                return -EBADMSG;
        *ret_port_text = close[1] == ':' ? close + 2 : NULL;
        *ret_host = TAKE_PTR(host);
        return 0;
}

/* "name", "a.b.c.d", or either with ":port", in copy. */
static int authority_parse_plain(char *copy, char **ret_host, const char **ret_port_text) {
        _cleanup_free_ char *host = NULL;
        char *colon = strchr(copy, ':');
        struct in_addr in;

        if (colon && strchr(colon + 1, ':'))
                return -EBADMSG; /* an IPv6 literal needs its brackets */
        host = colon ? strndup(copy, (size_t) (colon - copy)) : strdup(copy);
        if (!host)
                return -ENOMEM;
        if (inet_pton(AF_INET, host, &in) != 1 && !egress_host_name_is_valid(host))
                return -EBADMSG;
        *ret_port_text = colon ? colon + 1 : NULL;
        *ret_host = TAKE_PTR(host);
        return 0;
}

int http_head_parse_authority(const char *s, size_t len, uint16_t default_port, char **ret_host,
                              uint16_t *ret_port) {
        _cleanup_free_ char *copy = NULL, *host = NULL;
        const char *port_text = NULL;
        uint16_t port = default_port;
        int r;

        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        if (strlen(copy) != len || len == 0)
                return -EBADMSG;

        if (copy[0] == '[')
                r = authority_parse_bracketed(copy, &host, &port_text);
        else
                r = authority_parse_plain(copy, &host, &port_text);
        if (r < 0)
                return r;

        if (port_text) {
                uint32_t n;
                if (parse_uint32(port_text, &n) < 0 || n < 1 || n > 65535)
                        return -EBADMSG;
                port = (uint16_t) n;
        }
        if (port == 0)
                return -EBADMSG;

        *ret_host = TAKE_PTR(host);
        *ret_port = port;
        return 0;
}

char *http_head_format_authority(const char *host, uint16_t port, bool with_port) {
        bool ipv6 = strchr(host, ':') != NULL;
        char *s;
        int r;

        if (ipv6)
                r = with_port ? asprintf(&s, "[%s]:%u", host, port) : asprintf(&s, "[%s]", host);
        else
                r = with_port ? asprintf(&s, "%s:%u", host, port) : asprintf(&s, "%s", host);
        return r < 0 ? NULL : s;
}

void http_head_request_done(HttpRequest *req) {
        free(req->method);
        free(req->host);
        free(req->path);
        free(req->headers);
        *req = (HttpRequest){ 0 };
}

static bool header_is_dropped(const char *name, size_t len) {
        /* Hop-by-hop, or ours to set: the relay speaks for itself to the destination. */
        static const char *const dropped[] = {
                "connection", "host", "keep-alive", "proxy-authorization", "proxy-connection",
        };

        for (size_t i = 0; i < ELEMENTSOF(dropped); i++)
                if (strlen(dropped[i]) == len && strncasecmp(name, dropped[i], len) == 0)
                        return true;
        return false;
}

/* "http://[user@]host[:port][/path][?query]" → host, port and origin-form path. */
static int absolute_url_parse(const char *target, HttpRequest *req, const char **reterr_reason) {
        const char *authority, *at;
        size_t len;
        int r;

        if (strncasecmp(target, "http://", 7) != 0) {
                *reterr_reason =
                        strncasecmp(target, "https://", 8) == 0
                                ? "https:// URLs go through CONNECT, not as plain requests"
                        : target[0] == '/'
                                ? "this is a proxy: the request target must be an absolute http:// URL"
                                : "only http:// URLs can be forwarded";
                return -EBADMSG;
        }
        authority = target + 7;
        len = strcspn(authority, "/?#");
        at = memrchr(authority, '@', len);
        if (at) { /* user info is not forwarded: clients send it as Authorization */
                len -= (size_t) (at + 1 - authority);
                authority = at + 1;
        }
        r = http_head_parse_authority(authority, len, 80, &req->host, &req->port);
        if (r == -EBADMSG)
                *reterr_reason = "malformed host or port in the URL";
        if (r < 0)
                return r;

        const char *path = authority + len;
        size_t path_len = strcspn(path, "#"); /* a fragment never goes on the wire */
        if (path[0] == '/')
                req->path = strndup(path, path_len);
        else if (asprintf(&req->path, "/%.*s", (int) path_len, path) < 0)
                req->path = NULL;
        return req->path ? 0 : -ENOMEM;
}

/* Sets the reason of a refusal, for the 400 answer. */
static int bad_request(const char **reterr_reason, const char *reason) {
        *reterr_reason = reason;
        return -EBADMSG;
}

/* Splits "METHOD TARGET VERSION" (line, modified) and checks each part's characters. */
static int request_line_split(char *line, char **ret_method, char **ret_target, unsigned *ret_minor,
                              const char **reterr_reason) {
        char *method = line, *target, *version;

        target = strchr(method, ' ');
        version = target ? strchr(target + 1, ' ') : NULL;
        if (!target || !version || strchr(version + 1, ' '))
                return bad_request(reterr_reason, "malformed request line");
        *target++ = '\0';
        *version++ = '\0';
        if (method[0] == '\0' || strlen(method) > METHOD_MAX || target[0] == '\0')
                return bad_request(reterr_reason, "malformed request line");
        for (const char *c = method; *c; c++)
                if (!is_tchar(*c))
                        return bad_request(reterr_reason, "malformed method");
        for (const char *c = target; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
                        return bad_request(
                                reterr_reason,
                                "control characters, spaces or non-ASCII bytes in the request target");
        if (streq(version, "HTTP/1.1"))
                *ret_minor = 1;
        else if (streq(version, "HTTP/1.0"))
                *ret_minor = 0;
        else
                return bad_request(reterr_reason, "only HTTP/1.0 and HTTP/1.1 are spoken");
        *ret_method = method;
        *ret_target = target;
        return 0;
}

/* The request line (modified): method, version, and the destination from its target. */
static int request_line_parse(char *line, HttpRequest *req, const char **reterr_reason) {
        char *method, *target;
        int r;

        r = request_line_split(line, &method, &target, &req->minor, reterr_reason);
        if (r < 0)
                return r;
        req->method = strdup(method);
        if (!req->method)
                return -ENOMEM;
        if (!streq(method, "CONNECT"))
                return absolute_url_parse(target, req, reterr_reason);

        req->tunnel = true;
        r = http_head_parse_authority(target, strlen(target), 0, &req->host, &req->port);
        if (r == -EBADMSG)
                *reterr_reason = "CONNECT needs host:port";
        return r;
}

/* One header line: "name: value", a token as name, no control characters but tab in the value. */
static bool header_line_is_valid(const char *line, const char **ret_colon) {
        const char *colon = strchr(line, ':');

        if (!colon || colon == line)
                return false;
        for (const char *c = line; c < colon; c++)
                if (!is_tchar(*c))
                        return false;
        for (const char *c = colon + 1; *c; c++)
                if (((unsigned char) *c < ' ' && *c != '\t') || *c == 0x7f)
                        return false;
        *ret_colon = colon;
        return true;
}

/* The header lines from lines (modified) to the empty line: kept as they are, each with CRLF, except the
 * dropped ones; a malformed one refuses the request. */
static int headers_parse(char *lines, char **ret, const char **reterr_reason) {
        _cleanup_free_ char *headers = NULL;
        size_t headers_size = 0;
        char *next;
        FILE *h;

        h = open_memstream(&headers, &headers_size);
        if (!h)
                return -ENOMEM;
        for (char *line = lines; line && *line; line = next) {
                const char *colon;
                char *end;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                end = line + strlen(line);
                if (end > line && end[-1] == '\r')
                        *--end = '\0';
                if (line[0] == '\0')
                        break; /* the empty line that ends the head */
                if (line[0] == ' ' || line[0] == '\t') {
                        (void) fclose(h);
                        return bad_request(reterr_reason, "obsolete line folding in a header");
                }
                if (!header_line_is_valid(line, &colon)) {
                        (void) fclose(h);
                        return bad_request(reterr_reason, "malformed header line");
                }
                if (!header_is_dropped(line, (size_t) (colon - line)))
                        (void) fprintf(h, "%s\r\n", line);
        }
        if (fclose(h) != 0 || !headers)
                return -ENOMEM;
        *ret = TAKE_PTR(headers);
        return 0;
}

int http_head_parse_request(const uint8_t *head, size_t len, HttpRequest *ret, const char **reterr_reason) {
        _cleanup_(http_head_request_done) HttpRequest req = { 0 };
        _cleanup_free_ char *text = NULL;
        char *line, *next;
        int r;

        if (memchr(head, '\0', len))
                return bad_request(reterr_reason, "NUL byte in the request head");
        text = strndup((const char *) head, len);
        if (!text)
                return -ENOMEM;

        /* The request line, after any empty lines (RFC 9112 §2.2). */
        line = text;
        while (*line == '\r' || *line == '\n')
                line++;
        next = strchr(line, '\n');
        if (!next)
                return bad_request(reterr_reason, "no request line");
        *next++ = '\0';
        if (next - line >= 2 && next[-2] == '\r')
                next[-2] = '\0';

        r = request_line_parse(line, &req, reterr_reason);
        if (r < 0)
                return r;
        r = headers_parse(next, &req.headers, reterr_reason);
        if (r < 0)
                return r;

        *ret = req;
        req = (HttpRequest){ 0 };
        return 0;
}

unsigned http_head_parse_status(const uint8_t *p, size_t end,
                                char shown[static HTTP_HEAD_STATUS_SHOWN + 1]) {
        unsigned status = 0;
        size_t k = 0;

        for (; k < HTTP_HEAD_STATUS_SHOWN && k < end && p[k] != '\r' && p[k] != '\n'; k++)
                shown[k] = p[k] >= ' ' && p[k] < 0x7f ? (char) p[k] : '?';
        shown[k] = '\0';
        if (end >= 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ') {
                char code[4] = { (char) p[9], (char) p[10], (char) p[11], '\0' };
                uint32_t n;
                if (parse_uint32(code, &n) >= 0)
                        status = n;
        }
        return status;
}
