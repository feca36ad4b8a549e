/* egress: see egress.h.
 *
 * The relay is one process per run, single-threaded except for glibc's resolver helpers: a poll() loop
 * over non-blocking sockets. A client connection goes through these states:
 *
 *   HEAD        reading the request head (16 KiB, 10 s)
 *   RESOLVING   getaddrinfo_a() of the destination, or of the upstream proxy when chained (5 s)
 *   CONNECTING  non-blocking connect() to each candidate address in turn; for a direct connection only to
 *               those the policy allows, checked on the very sockaddr passed to connect() (10 s in all)
 *   HANDSHAKE   chained: the upstream proxy's answer to CONNECT, or the SOCKS5 exchange (10 s)
 *   RELAY       bytes both ways until the destination is done, or egress_idle_timeout without traffic
 *   REPLY       our own answer (400, 403, 408, 431, 502, 503, 504), then a short lingering close
 *
 * Why getaddrinfo_a() rather than alarm(): glibc's resolver restarts its poll() after EINTR, so an alarm
 * cannot bound getaddrinfo() without siglongjmp() out of it, which would leak its sockets and could leave
 * malloc's lock held. getaddrinfo_a() resolves on glibc's helper threads; completion is signalled with
 * SIGUSR1, which is blocked and read from a signalfd, so one slow name never stalls the other connections.
 * A resolution that outlives its 5 s is abandoned: gai_cancel() cannot stop a running lookup, so its
 * request is kept aside until glibc reports it done, then freed. */

#define SD_JOURNAL_SUPPRESS_LOCATION

#include "egress.h"

#include <arpa/inet.h>
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "common/cleanup.h"
#include "common/config.h"
#include "common/parse.h"
#include "creds.h"
#include "egress-policy.h"

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define HEAD_MAX (16U * 1024U)                   /* a request head, and an upstream proxy's answer */
#define HEAD_TIMEOUT_USEC (10 * USEC_PER_SEC)    /* for the whole request head */
#define RESOLVE_TIMEOUT_USEC (5 * USEC_PER_SEC)  /* getaddrinfo_a() */
#define CONNECT_TIMEOUT_USEC (10 * USEC_PER_SEC) /* every candidate address together */
#define HANDSHAKE_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define REPLY_TIMEOUT_USEC (5 * USEC_PER_SEC) /* to write our answer */
#define LINGER_USEC (2 * USEC_PER_SEC)  /* reading what the client still sends, so it sees the answer */
#define RELAY_BUFFER_SIZE (64U * 1024U) /* each direction of one connection */
#define EXTRA_CLIENTS 16U /* clients being read or answered beyond egress_max_connections; more wait */
#define START_TIMEOUT_MSEC 5000
#define RELAY_UID 65534 /* nobody */
#define RELAY_GID 65534 /* nogroup */
#define RESOLVE_SIGNAL SIGUSR1
#define SOCKS5_VERSION 5
#define STATUS_LINE_SHOWN 120 /* bytes of an upstream proxy's status line quoted in a reason */
/* Denials of one run logged one by one; after them one record says the rest are only counted (the run's
 * record has them all, EGRESS_DENIALS). A run once logged 2,010 denials in 3.5 s. */
#define DENIALS_LOGGED 5U

struct EgressRelay {
        pid_t pid;
        int pidfd;
        int denial_fd; /* read end: one byte per denial */
};

typedef enum Route {
        ROUTE_DIRECT,     /* the relay connects itself */
        ROUTE_HTTP_PROXY, /* through an upstream HTTP proxy: CONNECT, or an absolute-form request */
        ROUTE_SOCKS5,     /* through an upstream SOCKS5 proxy, with the name (ATYP 3) */
} Route;

typedef struct Upstream {
        Route route; /* ROUTE_DIRECT: not configured */
        char *host;
        uint16_t port;
        char *authorization; /* "Basic ..." from the user info of an http:// proxy, or NULL */
} Upstream;

typedef struct Buffer {
        uint8_t *data;
        size_t size, start, end;
} Buffer;

typedef struct Resolution {
        struct gaicb cb; /* glibc keeps a pointer to this until the lookup is done */
        struct addrinfo hints;
        char *name;
        char service[sizeof("65535")];
} Resolution;

typedef enum ConnState {
        CONN_HEAD,
        CONN_RESOLVING,
        CONN_CONNECTING,
        CONN_HANDSHAKE,
        CONN_RELAY,
        CONN_REPLY,
        CONN_DEAD, /* freed at the end of the loop iteration */
} ConnState;

typedef struct Conn {
        ConnState state;
        int client, upstream;
        uint64_t deadline;
        bool holds_slot; /* one of egress_max_connections */

        /* the request */
        bool tunnel; /* CONNECT */
        char *host;  /* the destination as the request named it, IPv6 without brackets */
        uint16_t port;
        const Upstream *via; /* NULL: direct */

        Buffer in;   /* client → destination: the head while in CONN_HEAD, then what follows it */
        Buffer out;  /* destination → client, and our own answers */
        Buffer tx;   /* to the upstream socket before anything of in: forwarded head, CONNECT, SOCKS5 */
        Buffer head; /* plain requests: the head the next hop gets, moved to tx once the way is open */
        Buffer rx;   /* the upstream proxy's answers during CONN_HANDSHAKE */
        bool client_eof, upstream_eof, upstream_shut, lingering;
        unsigned socks_step;

        Resolution *resolution;             /* in CONN_RESOLVING */
        struct addrinfo *candidates, *next; /* the resolved addresses, and the next one to try */
        unsigned attempts;                  /* connect()s started */
        int last_error;                     /* of the last failed connect() */
        char address[INET6_ADDRSTRLEN];     /* of the current attempt, for messages */
        char *denial, *denied_address;      /* the first candidate the policy refused */
} Conn;

typedef struct Relay {
        const Config *cfg;
        EgressPolicy *policy;
        char *run_id;
        Upstream http, https, socks5;
        char **no_proxy; /* proxy.no_proxy: lower-case names and suffixes; "*" is everything */
        bool journal;    /* log to journald, as log.c decides; else to stderr */

        int listener, signal_fd, denial_fd;
        Conn **conns;
        size_t n_conns, allocated;
        size_t active; /* connections holding a slot */
        bool accept_paused;
        Resolution **orphans; /* abandoned lookups glibc still runs */
        size_t n_orphans;
        unsigned denials; /* so far, for the rate limit of their log records */
        uint64_t bytes;   /* relayed, both directions */
        bool budget_spent;
        struct pollfd *pfds;
        size_t pfds_allocated;
} Relay;

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* ---------------------------------------------------------------------------------------- buffers */

static void buffer_done(Buffer *b) {
        free(b->data);
        *b = (Buffer){ 0 };
}

static size_t buffer_len(const Buffer *b) {
        return b->end - b->start;
}

/* Room at the end, allocating the buffer (size bytes) on first use. */
static int buffer_space(Buffer *b, size_t size, size_t *ret) {
        if (!b->data) {
                b->data = malloc(size);
                if (!b->data)
                        return -ENOMEM;
                b->size = size;
        }
        if (b->start > 0) {
                memmove(b->data, b->data + b->start, buffer_len(b));
                b->end -= b->start;
                b->start = 0;
        }
        *ret = b->size - b->end;
        return 0;
}

static int buffer_append(Buffer *b, const void *p, size_t n) {
        size_t space;
        int r;

        r = buffer_space(b, n > RELAY_BUFFER_SIZE ? n : RELAY_BUFFER_SIZE, &space);
        if (r < 0)
                return r;
        if (space < n) {
                uint8_t *d = realloc(b->data, b->end + n);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->size = b->end + n;
        }
        memcpy(b->data + b->end, p, n);
        b->end += n;
        return 0;
}

/* Whether a read into b could take a byte: an unallocated buffer will be. */
static bool buffer_has_room(const Buffer *b) {
        return !b->data || b->size > buffer_len(b);
}

static void buffer_consume(Buffer *b, size_t n) {
        b->start += n;
        if (b->start == b->end)
                b->start = b->end = 0;
}

static void buffer_clear(Buffer *b) {
        b->start = b->end = 0;
}

/* Reads at most max bytes into b. Returns the bytes read, 0 at EOF, -EAGAIN, or -errno. */
static ssize_t buffer_read(Buffer *b, int fd, size_t size, size_t max) {
        size_t space;
        ssize_t n;
        int r;

        r = buffer_space(b, size, &space);
        if (r < 0)
                return r;
        if (space > max)
                space = max;
        if (space == 0)
                return -EAGAIN;
        n = recv(fd, b->data + b->end, space, 0);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->end += (size_t) n;
        return n;
}

/* Writes what b holds. Returns the bytes written, -EAGAIN, or -errno. */
static ssize_t buffer_write(Buffer *b, int fd) {
        ssize_t n;

        if (buffer_len(b) == 0)
                return 0;
        n = send(fd, b->data + b->start, buffer_len(b), MSG_NOSIGNAL);
        if (n < 0)
                return errno == EINTR || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        buffer_consume(b, (size_t) n);
        return n;
}

/* -------------------------------------------------------------------------- addresses and URLs */

static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool host_is_ipv6(const char *host) {
        return strchr(host, ':') != NULL;
}

static bool host_is_ip_literal(const char *host) {
        uint8_t a[16];

        return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* "host[:port]" or "[v6][:port]" (len bytes of s). The host is an IP literal or a valid name; the port is
 * required when default_port is 0. Returns 0 or -EBADMSG. */
static int authority_parse(const char *s, size_t len, uint16_t default_port, char **ret_host,
                           uint16_t *ret_port) {
        _cleanup_free_ char *copy = NULL, *host = NULL;
        const char *port_text = NULL;
        struct in6_addr in6;
        struct in_addr in;
        uint16_t port = default_port;

        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        if (strlen(copy) != len || len == 0)
                return -EBADMSG;

        if (copy[0] == '[') {
                char *close = strchr(copy, ']');
                if (!close || (close[1] != '\0' && close[1] != ':'))
                        return -EBADMSG;
                host = strndup(copy + 1, (size_t) (close - copy - 1));
                if (!host)
                        return -ENOMEM;
                if (inet_pton(AF_INET6, host, &in6) != 1)
                        return -EBADMSG;
                if (close[1] == ':')
                        port_text = close + 2;
        } else {
                char *colon = strchr(copy, ':');
                if (colon && strchr(colon + 1, ':'))
                        return -EBADMSG; /* an IPv6 literal needs its brackets */
                host = colon ? strndup(copy, (size_t) (colon - copy)) : strdup(copy);
                if (!host)
                        return -ENOMEM;
                if (colon)
                        port_text = colon + 1;
                if (inet_pton(AF_INET, host, &in) != 1 && !egress_host_name_is_valid(host))
                        return -EBADMSG;
        }

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

/* "host:port", IPv6 in brackets: the authority of a CONNECT and of a Host header. */
static char *authority_format(const char *host, uint16_t port, bool with_port) {
        char *s;
        int r;

        if (host_is_ipv6(host))
                r = with_port ? asprintf(&s, "[%s]:%u", host, port) : asprintf(&s, "[%s]", host);
        else
                r = with_port ? asprintf(&s, "%s:%u", host, port) : asprintf(&s, "%s", host);
        return r < 0 ? NULL : s;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static int percent_decode(const char *s, size_t len, char **ret) {
        _cleanup_free_ char *d = malloc(len + 1);
        size_t k = 0;

        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != '%') {
                        d[k++] = s[i];
                        continue;
                }
                if (i + 2 >= len)
                        return -EINVAL;
                int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
                if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                        return -EINVAL;
                d[k++] = (char) (hi * 16 + lo);
                i += 2;
        }
        d[k] = '\0';
        *ret = TAKE_PTR(d);
        return 0;
}

static char *base64_encode(const char *s) {
        static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t len = strlen(s), k = 0;
        const unsigned char *p = (const unsigned char *) s;
        char *e = malloc((len + 2) / 3 * 4 + 1);

        if (!e)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t) p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                e[k++] = table[(v >> 18) & 63];
                e[k++] = table[(v >> 12) & 63];
                e[k++] = i + 1 < len ? table[(v >> 6) & 63] : '=';
                e[k++] = i + 2 < len ? table[v & 63] : '=';
        }
        e[k] = '\0';
        return e;
}

static void upstream_done(Upstream *u) {
        free(u->host);
        free(u->authorization);
        *u = (Upstream){ 0 };
}

/* proxy.http, proxy.https, proxy.socks5: "http://[user:password@]host[:port][/]",
 * "socks5://host[:port]" or "socks5h://host[:port]"; empty means none. */
static int upstream_parse(const char *url, Upstream *ret) {
        _cleanup_free_ char *host = NULL, *user = NULL, *encoded = NULL, *authorization = NULL;
        const char *rest, *end, *at;
        Route route;
        uint16_t default_port;
        uint16_t port;
        size_t len;
        int r;

        *ret = (Upstream){ 0 };
        if (!url || url[0] == '\0')
                return 0;

        if (strncasecmp(url, "http://", 7) == 0) {
                route = ROUTE_HTTP_PROXY;
                default_port = 80;
                rest = url + 7;
        } else if (strncasecmp(url, "socks5://", 9) == 0 || strncasecmp(url, "socks5h://", 10) == 0) {
                route = ROUTE_SOCKS5;
                default_port = 1080;
                rest = strchr(url, '/') + 2;
        } else
                return -EPROTONOSUPPORT;

        len = strcspn(rest, "/?#");
        end = rest + len;
        if (*end != '\0' && !streq(end, "/"))
                return -EINVAL;
        at = memrchr(rest, '@', len);
        if (at) {
                if (route != ROUTE_HTTP_PROXY)
                        return -EPROTONOSUPPORT; /* SOCKS5 without authentication only */
                r = percent_decode(rest, (size_t) (at - rest), &user);
                if (r < 0)
                        return r;
                encoded = base64_encode(user);
                if (!encoded || asprintf(&authorization, "Basic %s", encoded) < 0)
                        return -ENOMEM;
                len -= (size_t) (at + 1 - rest);
                rest = at + 1;
        }
        r = authority_parse(rest, len, default_port, &host, &port);
        if (r == -EBADMSG)
                return -EINVAL;
        if (r < 0)
                return r;

        *ret = (Upstream){ .route = route,
                           .host = TAKE_PTR(host),
                           .port = port,
                           .authorization = TAKE_PTR(authorization) };
        return 0;
}

int egress_proxy_url_check(const char *url) {
        Upstream u;
        int r;

        r = upstream_parse(url, &u);
        if (r < 0)
                return r;
        upstream_done(&u);
        return 0;
}

static char **strv_free(char **l) {
        for (char **s = l; s && *s; s++)
                free(*s);
        free(l);
        return NULL;
}

/* proxy.no_proxy: comma- or space-separated names; "example.com" and ".example.com" both mean the name and
 * every name below it, as curl reads NO_PROXY; "*" means every destination. */
static int no_proxy_parse(const char *text, char ***ret) {
        size_t n = 0, k = 0;
        char **l;

        for (const char *p = text ?: ""; *p; p++)
                n += *p == ',' || *p == ' ';
        l = calloc(n + 2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (const char *p = text ?: ""; *p;) {
                size_t len = strcspn(p, ", ");
                const char *item = p;

                p += len;
                if (*p)
                        p++;
                while (len > 0 && *item == '.') {
                        item++;
                        len--;
                }
                if (len == 0)
                        continue;
                l[k] = strndup(item, len);
                if (!l[k]) {
                        (void) strv_free(l);
                        return -ENOMEM;
                }
                for (char *c = l[k]; *c; c++)
                        if (*c >= 'A' && *c <= 'Z')
                                *c = (char) (*c - 'A' + 'a');
                k++;
        }
        *ret = l;
        return 0;
}

static bool no_proxy_matches(char *const *l, const char *host) {
        size_t len = strlen(host);

        for (; l && *l; l++) {
                size_t n = strlen(*l);
                if (streq(*l, "*"))
                        return true;
                if (len == n && strncasecmp(host, *l, n) == 0)
                        return true;
                if (len > n && host[len - n - 1] == '.' && strncasecmp(host + len - n, *l, n) == 0)
                        return true;
        }
        return false;
}

/* ------------------------------------------------------------------------------------ requests */

typedef struct Request {
        bool tunnel;
        char *method;
        unsigned minor; /* HTTP/1.minor */
        char *host;     /* IPv6 without brackets */
        uint16_t port;
        char *path;    /* origin-form, plain requests */
        char *headers; /* the client's header lines that are forwarded, each with its CRLF */
} Request;

static void request_done(Request *req) {
        free(req->method);
        free(req->host);
        free(req->path);
        free(req->headers);
        *req = (Request){ 0 };
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
static int absolute_url_parse(const char *target, Request *req, const char **reterr_reason) {
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
        r = authority_parse(authority, len, 80, &req->host, &req->port);
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

/* Parses the head (len bytes, up to and with its empty line). Returns 0, -EBADMSG with a reason, or
 * -ENOMEM. */
static int request_parse(const uint8_t *head, size_t len, Request *ret, const char **reterr_reason) {
        _cleanup_(request_done) Request req = { 0 };
        _cleanup_free_ char *text = NULL, *headers = NULL;
        char *line, *next, *method, *target, *version;
        size_t headers_size = 0;
        FILE *h;
        int r;

        if (memchr(head, '\0', len)) {
                *reterr_reason = "NUL byte in the request head";
                return -EBADMSG;
        }
        text = strndup((const char *) head, len);
        if (!text)
                return -ENOMEM;

        /* The request line, after any empty lines (RFC 9112 §2.2). */
        line = text;
        while (*line == '\r' || *line == '\n')
                line++;
        next = strchr(line, '\n');
        if (!next) {
                *reterr_reason = "no request line";
                return -EBADMSG;
        }
        *next++ = '\0';
        if (next - line >= 2 && next[-2] == '\r')
                next[-2] = '\0';
        method = line;
        target = strchr(method, ' ');
        version = target ? strchr(target + 1, ' ') : NULL;
        if (!target || !version || strchr(version + 1, ' ')) {
                *reterr_reason = "malformed request line";
                return -EBADMSG;
        }
        *target++ = '\0';
        *version++ = '\0';
        if (method[0] == '\0' || strlen(method) > 32 || target[0] == '\0') {
                *reterr_reason = "malformed request line";
                return -EBADMSG;
        }
        for (const char *c = method; *c; c++)
                if (!is_tchar(*c)) {
                        *reterr_reason = "malformed method";
                        return -EBADMSG;
                }
        for (const char *c = target; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f) {
                        *reterr_reason =
                                "control characters, spaces or non-ASCII bytes in the request target";
                        return -EBADMSG;
                }
        if (streq(version, "HTTP/1.1"))
                req.minor = 1;
        else if (streq(version, "HTTP/1.0"))
                req.minor = 0;
        else {
                *reterr_reason = "only HTTP/1.0 and HTTP/1.1 are spoken";
                return -EBADMSG;
        }
        req.method = strdup(method);
        if (!req.method)
                return -ENOMEM;

        if (streq(method, "CONNECT")) {
                req.tunnel = true;
                r = authority_parse(target, strlen(target), 0, &req.host, &req.port);
                if (r == -EBADMSG)
                        *reterr_reason = "CONNECT needs host:port";
                if (r < 0)
                        return r;
        } else {
                r = absolute_url_parse(target, &req, reterr_reason);
                if (r < 0)
                        return r;
        }

        /* The header lines: kept as they are, except the dropped ones; malformed ones refuse the request. */
        h = open_memstream(&headers, &headers_size);
        if (!h)
                return -ENOMEM;
        for (line = next; line && *line; line = next) {
                char *colon, *end;

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
                        *reterr_reason = "obsolete line folding in a header";
                        return -EBADMSG;
                }
                colon = strchr(line, ':');
                bool bad = !colon || colon == line;
                for (const char *c = line; !bad && c < colon; c++)
                        bad = !is_tchar(*c);
                for (const char *c = colon ? colon + 1 : line; !bad && *c; c++)
                        bad = ((unsigned char) *c < ' ' && *c != '\t') || *c == 0x7f;
                if (bad) {
                        (void) fclose(h);
                        *reterr_reason = "malformed header line";
                        return -EBADMSG;
                }
                if (!header_is_dropped(line, (size_t) (colon - line)))
                        (void) fprintf(h, "%s\r\n", line);
        }
        if (fclose(h) != 0 || !headers)
                return -ENOMEM;

        req.headers = TAKE_PTR(headers);
        *ret = req;
        req = (Request){ 0 };
        return 0;
}

int egress_request_check(const uint8_t *head, size_t len) {
        const char *reason = NULL;
        Request req;
        int r;

        r = request_parse(head, len, &req, &reason);
        if (r < 0)
                return r;
        request_done(&req);
        return 0;
}

/* --------------------------------------------------------------------------------- logging */

static void relay_log_denial(const Relay *relay, const char *host, uint16_t port, const char *address,
                             const char *reason) {
        _cleanup_free_ char *destination = authority_format(host, port, true); /* "[::1]:80" */

        if (relay->journal)
                (void) sd_journal_send(
                        "MESSAGE=Egress denied for run %s: %s (%s): %s", relay->run_id, destination ?: host,
                        address, reason, "MESSAGE_ID=" MESSAGE_EGRESS_DENIED_STR, "PRIORITY=%i", LOG_WARNING,
                        "DIFYSANDBOX_RUN_ID=%s", relay->run_id, "EGRESS_HOST=%s", host, "EGRESS_PORT=%u",
                        port, "EGRESS_ADDRESS=%s", address, "EGRESS_REASON=%s", reason, NULL);
        else
                (void) fprintf(stderr, "<%i>Egress denied for run %s: %s (%s): %s\n", LOG_WARNING,
                               relay->run_id, destination ?: host, address, reason);
}

/* Once, after DENIALS_LOGGED denials: the summary that stands for the rest. */
static void relay_log_denials_suppressed(const Relay *relay) {
        if (relay->journal)
                (void) sd_journal_send(
                        "MESSAGE=Egress denied %u times for run %s; further denials of this run "
                        "are not logged, its run record counts them all (EGRESS_DENIALS)",
                        relay->denials, relay->run_id, "PRIORITY=%i", LOG_WARNING, "DIFYSANDBOX_RUN_ID=%s",
                        relay->run_id, NULL);
        else
                (void) fprintf(stderr,
                               "<%i>Egress denied %u times for run %s; further denials of this run are not "
                               "logged, its run record counts them all (EGRESS_DENIALS)\n",
                               LOG_WARNING, relay->denials, relay->run_id);
}

static void relay_log_budget(const Relay *relay) {
        if (relay->journal)
                (void) sd_journal_send("MESSAGE=Egress byte limit of %" PRIu64 " reached for run %s, "
                                       "closing its connections",
                                       relay->cfg->egress_max_bytes, relay->run_id, "PRIORITY=%i",
                                       LOG_WARNING, "DIFYSANDBOX_RUN_ID=%s", relay->run_id, NULL);
        else
                (void) fprintf(stderr,
                               "<%i>Egress byte limit of %" PRIu64 " reached for run %s, closing its "
                               "connections\n",
                               LOG_WARNING, relay->cfg->egress_max_bytes, relay->run_id);
}

/* ----------------------------------------------------------------------------- connections */

static void resolution_free(Resolution *res) {
        if (!res)
                return;
        if (res->cb.ar_result)
                freeaddrinfo(res->cb.ar_result);
        free(res->name);
        free(res);
}

/* A lookup nobody waits for any more: freed now if glibc lets go of it, else once it is done. */
static void relay_abandon(Relay *relay, Resolution *res) {
        Resolution **o;

        if (!res)
                return;
        if (gai_cancel(&res->cb) != EAI_NOTCANCELED) {
                resolution_free(res);
                return;
        }
        o = reallocarray(relay->orphans, relay->n_orphans + 1, sizeof(Resolution *));
        if (!o)
                return; /* leaked rather than freed under glibc's feet */
        relay->orphans = o;
        relay->orphans[relay->n_orphans++] = res;
}

static void conn_release_slot(Relay *relay, Conn *c) {
        if (!c->holds_slot)
                return;
        c->holds_slot = false;
        relay->active--;
}

static void conn_close_upstream(Relay *relay, Conn *c) {
        c->upstream = safe_close(c->upstream);
        relay_abandon(relay, TAKE_PTR(c->resolution));
        if (c->candidates)
                freeaddrinfo(c->candidates);
        c->candidates = c->next = NULL;
        buffer_done(&c->tx);
        buffer_done(&c->rx);
        conn_release_slot(relay, c);
}

static void conn_kill(Relay *relay, Conn *c) {
        conn_close_upstream(relay, c);
        c->client = safe_close(c->client);
        c->state = CONN_DEAD;
}

static Conn *conn_free(Conn *c) {
        if (!c)
                return NULL;
        assert(c->client < 0 && c->upstream < 0 && !c->resolution && !c->holds_slot);
        buffer_done(&c->in);
        buffer_done(&c->out);
        buffer_done(&c->head);
        free(c->host);
        free(c->denial);
        free(c->denied_address);
        free(c);
        return NULL;
}

static const char *status_text(unsigned status) {
        switch (status) {
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 408:
                return "Request Timeout";
        case 431:
                return "Request Header Fields Too Large";
        case 502:
                return "Bad Gateway";
        case 503:
                return "Service Unavailable";
        case 504:
                return "Gateway Timeout";
        default:
                return "Error";
        }
}

/* Answers the client with our own status and reason, then closes. */
static void conn_reply(Relay *relay, Conn *c, unsigned status, const char *reason, uint64_t now) {
        _cleanup_free_ char *body = NULL, *text = NULL;
        int n;

        conn_close_upstream(relay, c);
        buffer_clear(&c->in);
        buffer_clear(&c->out);
        if (asprintf(&body, "difysandbox egress proxy: %s\n", reason) < 0 ||
            (n = asprintf(&text,
                          "HTTP/1.1 %u %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                          "Connection: close\r\n\r\n%s",
                          status, status_text(status), strlen(body), body)) < 0 ||
            buffer_append(&c->out, text, (size_t) n) < 0) {
                conn_kill(relay, c);
                return;
        }
        c->state = CONN_REPLY;
        c->deadline = now + REPLY_TIMEOUT_USEC;
}

static void __attribute__((format(printf, 5, 6)))
conn_replyf(Relay *relay, Conn *c, unsigned status, uint64_t now, const char *format, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&reason, format, ap);
        va_end(ap);
        if (r < 0) {
                conn_kill(relay, c);
                return;
        }
        conn_reply(relay, c, status, reason, now);
}

static void conn_deny(Relay *relay, Conn *c, const char *address, const char *reason, uint64_t now) {
        static const uint8_t byte = 1;

        if (relay->denials < UINT_MAX)
                relay->denials++;
        if (relay->denials <= DENIALS_LOGGED)
                relay_log_denial(relay, c->host, c->port, address, reason);
        else if (relay->denials == DENIALS_LOGGED + 1)
                relay_log_denials_suppressed(relay);
        (void) !write(relay->denial_fd, &byte, 1); /* a full pipe only loses the count */
        conn_reply(relay, c, 403, reason, now);
}

static int sockaddr_to_string(const struct sockaddr *sa, char buf[static INET6_ADDRSTRLEN]) {
        const void *a = sa->sa_family == AF_INET
                                ? (const void *) &((const struct sockaddr_in *) sa)->sin_addr
                                : (const void *) &((const struct sockaddr_in6 *) sa)->sin6_addr;

        if (!inet_ntop(sa->sa_family, a, buf, INET6_ADDRSTRLEN))
                return -errno;
        return 0;
}

static const char *upstream_name(const Upstream *u) {
        return u->route == ROUTE_SOCKS5 ? "SOCKS5 proxy" : "HTTP proxy";
}

/* The next candidate the policy allows (direct) or any (chained), connecting. When none is left: 403 when
 * the policy refused every one, else 502. */
static void conn_connect_next(Relay *relay, Conn *c, uint64_t now) {
        for (struct addrinfo *ai = c->next; ai; ai = c->next) {
                char text[INET6_ADDRSTRLEN];
                const char *reason;
                int fd, r;

                c->next = ai->ai_next;
                if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
                    sockaddr_to_string(ai->ai_addr, text) < 0)
                        continue;
                if (!c->via) {
                        /* The very sockaddr connect() gets below: no second resolution can slip in. */
                        r = egress_policy_check(relay->policy, ai->ai_addr, c->host, c->port, &reason);
                        if (r < 0) {
                                if (!c->denial) {
                                        c->denial = strdup(reason);
                                        c->denied_address = strdup(text);
                                }
                                continue;
                        }
                }
                fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
                if (fd < 0) {
                        c->last_error = -errno;
                        continue;
                }
                c->attempts++;
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
                        c->last_error = -errno;
                        (void) safe_close(fd);
                        continue;
                }
                c->upstream = fd;
                memcpy(c->address, text, sizeof(text));
                c->state = CONN_CONNECTING;
                return;
        }

        if (c->via && c->attempts == 0)
                conn_replyf(relay, c, 502, now, "cannot reach the upstream %s %s:%u", upstream_name(c->via),
                            c->via->host, c->via->port);
        else if (c->via)
                conn_replyf(relay, c, 502, now, "cannot connect to the upstream %s %s:%u (%s): %s",
                            upstream_name(c->via), c->via->host, c->via->port, c->address,
                            strerror(-c->last_error));
        else if (c->attempts == 0 && c->denial) {
                _cleanup_free_ char *reason = TAKE_PTR(c->denial), *address = TAKE_PTR(c->denied_address);
                conn_deny(relay, c, address ?: "?", reason ?: "denied", now);
        } else if (c->attempts == 0)
                conn_replyf(relay, c, 502, now, "'%s' has no IPv4 or IPv6 address", c->host);
        else
                conn_replyf(relay, c, 502, now, "cannot connect to %s:%u (%s): %s", c->host, c->port,
                            c->address, strerror(-c->last_error));
}

static void conn_resolved(Relay *relay, Conn *c, struct addrinfo *result, uint64_t now) {
        c->candidates = c->next = result;
        c->deadline = now + CONNECT_TIMEOUT_USEC;
        conn_connect_next(relay, c, now);
}

/* Resolves name: at once for an IP literal, else with getaddrinfo_a(). */
static void conn_resolve(Relay *relay, Conn *c, const char *name, uint16_t port, uint64_t now) {
        struct addrinfo hints = {
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
                .ai_protocol = IPPROTO_TCP,
                .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
        };
        char service[sizeof("65535")];
        struct addrinfo *result = NULL;
        Resolution *res;

        (void) snprintf(service, sizeof(service), "%u", port);
        if (getaddrinfo(name, service, &hints, &result) == 0) {
                conn_resolved(relay, c, result, now);
                return;
        }

        res = calloc(1, sizeof(Resolution));
        if (!res || !(res->name = strdup(name))) {
                free(res);
                conn_reply(relay, c, 503, "out of memory", now);
                return;
        }
        memcpy(res->service, service, sizeof(service));
        res->hints = hints;
        res->hints.ai_flags = AI_NUMERICSERV;
        res->cb = (struct gaicb){ .ar_name = res->name,
                                  .ar_service = res->service,
                                  .ar_request = &res->hints };

        struct gaicb *list[] = { &res->cb };
        struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = RESOLVE_SIGNAL };
        if (getaddrinfo_a(GAI_NOWAIT, list, 1, &sev) != 0) {
                resolution_free(res);
                conn_replyf(relay, c, 502, now, "cannot resolve '%s': the resolver is unavailable", name);
                return;
        }
        c->resolution = res;
        c->state = CONN_RESOLVING;
        c->deadline = now + RESOLVE_TIMEOUT_USEC;
}

static void conn_check_resolution(Relay *relay, Conn *c, uint64_t now) {
        Resolution *res = c->resolution;
        struct addrinfo *result;
        int r;

        r = gai_error(&res->cb);
        if (r == EAI_INPROGRESS)
                return;
        c->resolution = NULL;
        result = TAKE_PTR(res->cb.ar_result);
        resolution_free(res);
        if (r != 0) {
                if (result)
                        freeaddrinfo(result);
                conn_replyf(relay, c, 502, now, "cannot resolve '%s': %s", c->via ? c->via->host : c->host,
                            gai_strerror(r));
                return;
        }
        conn_resolved(relay, c, result, now);
}

static int append_text(Buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int append_text(Buffer *b, const char *format, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int n;

        va_start(ap, format);
        n = vasprintf(&s, format, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return buffer_append(b, s, (size_t) n);
}

/* The SOCKS5 request for the destination: the name as ATYP 3, an IP literal as itself. */
static int socks5_request(Conn *c) {
        uint8_t msg[4 + 1 + 255 + 2] = { SOCKS5_VERSION, 1 /* CONNECT */, 0 };
        size_t len = 3, n = strlen(c->host);
        struct in6_addr in6;
        struct in_addr in;

        if (inet_pton(AF_INET, c->host, &in) == 1) {
                msg[len++] = 1;
                memcpy(msg + len, &in, 4);
                len += 4;
        } else if (inet_pton(AF_INET6, c->host, &in6) == 1) {
                msg[len++] = 4;
                memcpy(msg + len, &in6, 16);
                len += 16;
        } else {
                assert(n <= 255); /* host names are 253 bytes at most */
                msg[len++] = 3;
                msg[len++] = (uint8_t) n;
                memcpy(msg + len, c->host, n);
                len += n;
        }
        msg[len++] = (uint8_t) (c->port >> 8);
        msg[len++] = (uint8_t) (c->port & 0xff);
        return buffer_append(&c->tx, msg, len);
}

static const char *socks5_reply_text(uint8_t rep) {
        static const char *const texts[] = {
                [1] = "general failure",       [2] = "connection not allowed by ruleset",
                [3] = "network unreachable",   [4] = "host unreachable",
                [5] = "connection refused",    [6] = "TTL expired",
                [7] = "command not supported", [8] = "address type not supported",
        };

        return rep < ELEMENTSOF(texts) && texts[rep] ? texts[rep] : "unknown error";
}

/* Once the way to the destination is open: the tunnel's 200, and for a chained plain request nothing
 * more (its head is already in tx). */
static void conn_start_relay(Relay *relay, Conn *c, uint64_t now) {
        if (c->tunnel) {
                static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                Buffer early = c->out; /* what the upstream proxy sent after its answer */
                int r;

                c->out = (Buffer){ 0 };
                r = buffer_append(&c->out, established, strlen(established));
                if (r >= 0 && buffer_len(&early) > 0)
                        r = buffer_append(&c->out, early.data + early.start, buffer_len(&early));
                buffer_done(&early);
                if (r < 0) {
                        conn_kill(relay, c);
                        return;
                }
        }
        if (buffer_len(&c->head) > 0 &&
            buffer_append(&c->tx, c->head.data + c->head.start, buffer_len(&c->head)) < 0) {
                conn_kill(relay, c);
                return;
        }
        buffer_done(&c->head);
        buffer_done(&c->rx);
        c->state = CONN_RELAY;
        c->deadline = now + relay->cfg->egress_idle_timeout_usec;
}

/* The head of a plain request as the next hop gets it. */
static int conn_forward_head(Conn *c, const Request *req) {
        _cleanup_free_ char *authority = authority_format(c->host, c->port, c->port != 80);

        if (!authority)
                return -ENOMEM;
        if (c->via && c->via->route == ROUTE_HTTP_PROXY)
                return append_text(
                        &c->head,
                        "%s http://%s%s HTTP/1.%u\r\nHost: %s\r\n%s%s%s%sConnection: close\r\n\r\n",
                        req->method, authority, req->path, req->minor, authority, req->headers,
                        c->via->authorization ? "Proxy-Authorization: " : "", c->via->authorization ?: "",
                        c->via->authorization ? "\r\n" : "");
        return append_text(&c->head, "%s %s HTTP/1.%u\r\nHost: %s\r\n%sConnection: close\r\n\r\n",
                           req->method, req->path, req->minor, authority, req->headers);
}

/* Connected to the next hop. */
static void conn_connected(Relay *relay, Conn *c, uint64_t now) {
        _cleanup_free_ char *authority = NULL;
        static const uint8_t greeting[] = { SOCKS5_VERSION, 1, 0 /* no authentication */ };
        int r = 0;

        if (!c->via) {
                conn_start_relay(relay, c, now);
                return;
        }
        c->deadline = now + HANDSHAKE_TIMEOUT_USEC;
        if (c->via->route == ROUTE_SOCKS5) {
                c->socks_step = 0;
                c->state = CONN_HANDSHAKE;
                if (buffer_append(&c->tx, greeting, sizeof(greeting)) < 0)
                        conn_kill(relay, c);
                return;
        }
        if (!c->tunnel) { /* the absolute-form head goes as it is */
                conn_start_relay(relay, c, now);
                return;
        }
        authority = authority_format(c->host, c->port, true);
        if (!authority)
                r = -ENOMEM;
        if (r >= 0)
                r = append_text(&c->tx, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", authority,
                                authority, c->via->authorization ? "Proxy-Authorization: " : "",
                                c->via->authorization ?: "", c->via->authorization ? "\r\n" : "");
        if (r < 0) {
                conn_kill(relay, c);
                return;
        }
        c->state = CONN_HANDSHAKE;
}

static size_t head_end(const uint8_t *p, size_t len) {
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

/* What the upstream proxy answered so far, in rx. */
static void conn_handshake_progress(Relay *relay, Conn *c, uint64_t now) {
        const uint8_t *p = c->rx.data + c->rx.start;
        size_t len = buffer_len(&c->rx);

        if (c->via->route == ROUTE_HTTP_PROXY) {
                size_t end = head_end(p, len);
                unsigned status = 0;

                if (end == 0) {
                        if (len >= HEAD_MAX)
                                conn_replyf(relay, c, 502, now,
                                            "the upstream HTTP proxy sent an oversized answer");
                        return;
                }
                /* The status line, for the reason: printable ASCII only, and not too long. */
                char shown[STATUS_LINE_SHOWN + 1];
                size_t k = 0;
                for (; k < STATUS_LINE_SHOWN && k < end && p[k] != '\r' && p[k] != '\n'; k++)
                        shown[k] = p[k] >= ' ' && p[k] < 0x7f ? (char) p[k] : '?';
                shown[k] = '\0';
                if (end >= 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ') {
                        char code[4] = { (char) p[9], (char) p[10], (char) p[11], '\0' };
                        uint32_t n;
                        if (parse_uint32(code, &n) >= 0)
                                status = n;
                }
                if (status >= 200 && status < 300) {
                        buffer_consume(&c->rx, end);
                        if (buffer_append(&c->out, c->rx.data + c->rx.start, buffer_len(&c->rx)) < 0) {
                                conn_kill(relay, c);
                                return;
                        }
                        conn_start_relay(relay, c, now);
                        return;
                }
                conn_replyf(relay, c, status == 403 ? 403 : 502, now,
                            "the upstream HTTP proxy refused the tunnel: %s", shown);
                return;
        }

        /* SOCKS5: the method choice, then the reply to CONNECT. */
        if (c->socks_step == 0) {
                if (len < 2)
                        return;
                if (p[0] != SOCKS5_VERSION || p[1] != 0) {
                        conn_replyf(relay, c, 502, now,
                                    "the upstream SOCKS5 proxy %s:%u wants authentication", c->via->host,
                                    c->via->port);
                        return;
                }
                buffer_consume(&c->rx, 2);
                c->socks_step = 1;
                if (socks5_request(c) < 0)
                        conn_kill(relay, c);
                return;
        }
        if (len < 5)
                return;
        if (p[0] != SOCKS5_VERSION) {
                conn_replyf(relay, c, 502, now, "the upstream SOCKS5 proxy sent a malformed reply");
                return;
        }
        if (p[1] != 0) {
                conn_replyf(relay, c, p[1] == 2 ? 403 : 502, now,
                            "the upstream SOCKS5 proxy refused %s:%u: %s", c->host, c->port,
                            socks5_reply_text(p[1]));
                return;
        }
        size_t need = p[3] == 1   ? 4 + 4 + 2
                      : p[3] == 4 ? 4 + 16 + 2
                      : p[3] == 3 ? 4 + 1 + (size_t) p[4] + 2
                                  : 0;
        if (need == 0) {
                conn_replyf(relay, c, 502, now, "the upstream SOCKS5 proxy sent a malformed reply");
                return;
        }
        if (len < need)
                return;
        buffer_consume(&c->rx, need);
        if (buffer_append(&c->out, c->rx.data + c->rx.start, buffer_len(&c->rx)) < 0) {
                conn_kill(relay, c);
                return;
        }
        conn_start_relay(relay, c, now);
}

/* A whole request head is in c->in: check it, pick the route, and start resolving. */
static void conn_request(Relay *relay, Conn *c, size_t head_len, uint64_t now) {
        _cleanup_(request_done) Request req = { 0 };
        const char *reason = NULL;
        int r;

        r = request_parse(c->in.data + c->in.start, head_len, &req, &reason);
        if (r == -EBADMSG) {
                conn_reply(relay, c, 400, reason, now);
                return;
        }
        if (r < 0) {
                conn_reply(relay, c, 503, "out of memory", now);
                return;
        }
        buffer_consume(&c->in, head_len); /* what follows the head goes on as it is */
        c->tunnel = req.tunnel;
        c->host = TAKE_PTR(req.host);
        c->port = req.port;

        if (no_proxy_matches(relay->no_proxy, c->host))
                c->via = NULL;
        else if (c->tunnel && relay->https.route != ROUTE_DIRECT)
                c->via = &relay->https;
        else if (!c->tunnel && relay->http.route != ROUTE_DIRECT)
                c->via = &relay->http;
        else if (relay->socks5.route != ROUTE_DIRECT)
                c->via = &relay->socks5;

        /* The rules of names and ports first, before any lookup: a denied name is never resolved. With an
         * upstream proxy this is all the relay can check: the proxy resolves. */
        r = egress_policy_check(relay->policy, NULL, c->host, c->port, &reason);
        if (r < 0) {
                conn_deny(relay, c, host_is_ip_literal(c->host) ? c->host : "-", reason, now);
                return;
        }

        if (relay->budget_spent) {
                conn_replyf(relay, c, 503, now,
                            "the run has used its egress byte budget (egress_max_bytes %" PRIu64 ")",
                            relay->cfg->egress_max_bytes);
                return;
        }
        if (relay->active >= relay->cfg->egress_max_connections) {
                conn_replyf(relay, c, 503, now, "too many connections (egress_max_connections %" PRIu32 ")",
                            relay->cfg->egress_max_connections);
                return;
        }
        c->holds_slot = true;
        relay->active++;
        relay->bytes += head_len + buffer_len(&c->in); /* the head, and what the client sent after it */

        if (!c->tunnel) {
                /* The head the next hop gets, sent once the way is open (after the SOCKS5 exchange). */
                r = conn_forward_head(c, &req);
                if (r < 0) {
                        conn_reply(relay, c, 503, "out of memory", now);
                        return;
                }
        }
        if (c->via)
                conn_resolve(relay, c, c->via->host, c->via->port, now);
        else
                conn_resolve(relay, c, c->host, c->port, now);
}

/* ------------------------------------------------------------------------------- I/O per state */

static uint64_t budget_left(const Relay *relay) {
        return relay->bytes >= relay->cfg->egress_max_bytes ? 0
                                                            : relay->cfg->egress_max_bytes - relay->bytes;
}

static void conn_on_client(Relay *relay, Conn *c, short revents, uint64_t now) {
        bool readable = revents & (POLLIN | POLLHUP | POLLERR),
             writable = revents & (POLLOUT | POLLHUP | POLLERR);
        ssize_t n;

        switch (c->state) {

        case CONN_HEAD: {
                size_t end;

                if (!readable)
                        return;
                n = buffer_read(&c->in, c->client, RELAY_BUFFER_SIZE, HEAD_MAX - buffer_len(&c->in));
                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        conn_kill(relay, c); /* gone before asking anything */
                        return;
                }
                end = head_end(c->in.data + c->in.start, buffer_len(&c->in));
                if (end > 0)
                        conn_request(relay, c, end, now);
                else if (buffer_len(&c->in) >= HEAD_MAX)
                        conn_reply(relay, c, 431, "the request head is larger than 16 KiB", now);
                return;
        }

        case CONN_RELAY:
                if (readable && !c->client_eof && buffer_has_room(&c->in)) {
                        n = buffer_read(&c->in, c->client, RELAY_BUFFER_SIZE, budget_left(relay));
                        if (n == 0)
                                c->client_eof = true;
                        else if (n > 0) {
                                relay->bytes += (uint64_t) n;
                                c->deadline = now + relay->cfg->egress_idle_timeout_usec;
                        } else if (n != -EAGAIN) {
                                conn_kill(relay, c);
                                return;
                        }
                }
                if (writable && buffer_len(&c->out) > 0) {
                        n = buffer_write(&c->out, c->client);
                        if (n > 0)
                                c->deadline = now + relay->cfg->egress_idle_timeout_usec;
                        else if (n != -EAGAIN) {
                                conn_kill(relay, c);
                                return;
                        }
                }
                return;

        case CONN_REPLY:
                if (writable && buffer_len(&c->out) > 0) {
                        n = buffer_write(&c->out, c->client);
                        if (n < 0 && n != -EAGAIN) {
                                conn_kill(relay, c);
                                return;
                        }
                        if (buffer_len(&c->out) == 0) {
                                /* Half-close and read what the client still sends: closing with unread data
                                 * would reset the connection, and the client could lose our answer. */
                                (void) shutdown(c->client, SHUT_WR);
                                c->lingering = true;
                                c->deadline = now + LINGER_USEC;
                        }
                }
                if (readable && c->lingering) {
                        n = buffer_read(&c->in, c->client, RELAY_BUFFER_SIZE, RELAY_BUFFER_SIZE);
                        buffer_clear(&c->in);
                        if (n != -EAGAIN && n <= 0)
                                conn_kill(relay, c);
                }
                return;

        default:
                return;
        }
}

static void conn_on_upstream(Relay *relay, Conn *c, short revents, uint64_t now) {
        bool readable = revents & (POLLIN | POLLHUP | POLLERR),
             writable = revents & (POLLOUT | POLLHUP | POLLERR);
        ssize_t n;

        switch (c->state) {

        case CONN_CONNECTING: {
                int error = 0;
                socklen_t len = sizeof(error);

                if (!writable)
                        return;
                if (getsockopt(c->upstream, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
                        error = errno;
                if (error == 0) {
                        conn_connected(relay, c, now);
                        return;
                }
                c->last_error = -error;
                c->upstream = safe_close(c->upstream);
                conn_connect_next(relay, c, now);
                return;
        }

        case CONN_HANDSHAKE:
                if (writable && buffer_len(&c->tx) > 0) {
                        n = buffer_write(&c->tx, c->upstream);
                        if (n < 0 && n != -EAGAIN) {
                                conn_replyf(relay, c, 502, now, "lost the upstream %s: %s",
                                            upstream_name(c->via), strerror((int) -n));
                                return;
                        }
                }
                if (readable) {
                        n = buffer_read(&c->rx, c->upstream, HEAD_MAX, budget_left(relay));
                        if (n == 0 || (n < 0 && n != -EAGAIN)) {
                                conn_replyf(relay, c, 502, now, "the upstream %s closed the connection",
                                            upstream_name(c->via));
                                return;
                        }
                        if (n > 0) {
                                relay->bytes += (uint64_t) n;
                                conn_handshake_progress(relay, c, now);
                        }
                }
                return;

        case CONN_RELAY:
                if (writable && (buffer_len(&c->tx) > 0 || buffer_len(&c->in) > 0)) {
                        Buffer *b = buffer_len(&c->tx) > 0 ? &c->tx : &c->in;
                        n = buffer_write(b, c->upstream);
                        if (n > 0) {
                                if (b == &c->tx)
                                        relay->bytes += (uint64_t) n;
                                c->deadline = now + relay->cfg->egress_idle_timeout_usec;
                        } else if (n < 0 && n != -EAGAIN) {
                                /* The destination is gone: what it sent before still goes to the client
                                 * (a server may answer and reset without reading the whole request). */
                                buffer_clear(&c->tx);
                                buffer_clear(&c->in);
                                c->client_eof = c->upstream_eof = true;
                                return;
                        }
                }
                if (readable && !c->upstream_eof) {
                        n = buffer_read(&c->out, c->upstream, RELAY_BUFFER_SIZE, budget_left(relay));
                        if (n > 0) {
                                relay->bytes += (uint64_t) n;
                                c->deadline = now + relay->cfg->egress_idle_timeout_usec;
                        } else if (n != -EAGAIN)
                                c->upstream_eof = true; /* EOF, or a reset: deliver what came before it */
                }
                return;

        default:
                return;
        }
}

/* What the end of a step leaves to do: half-closes, and the end of a finished connection. */
static void conn_settle(Conn *c) {
        if (c->state != CONN_RELAY)
                return;
        if (c->client_eof && !c->upstream_shut && buffer_len(&c->tx) == 0 && buffer_len(&c->in) == 0) {
                (void) shutdown(c->upstream, SHUT_WR);
                c->upstream_shut = true;
        }
}

static bool conn_finished(const Conn *c) {
        return c->state == CONN_RELAY && c->upstream_eof && buffer_len(&c->out) == 0;
}

static void conn_on_timeout(Relay *relay, Conn *c, uint64_t now) {
        switch (c->state) {
        case CONN_HEAD:
                if (buffer_len(&c->in) == 0)
                        conn_kill(relay, c);
                else
                        conn_reply(relay, c, 408, "the request head did not arrive within 10 s", now);
                return;
        case CONN_RESOLVING:
                conn_replyf(relay, c, 504, now, "resolving '%s' took longer than 5 s",
                            c->via ? c->via->host : c->host);
                return;
        case CONN_CONNECTING:
                if (c->via)
                        conn_replyf(relay, c, 504, now,
                                    "connecting to the upstream %s %s:%u (%s) took longer than 10 s",
                                    upstream_name(c->via), c->via->host, c->via->port, c->address);
                else
                        conn_replyf(relay, c, 504, now, "connecting to %s:%u (%s) took longer than 10 s",
                                    c->host, c->port, c->address);
                return;
        case CONN_HANDSHAKE:
                conn_replyf(relay, c, 504, now, "the upstream %s did not answer within 10 s",
                            upstream_name(c->via));
                return;
        default: /* RELAY idle, REPLY written or lingered long enough */
                conn_kill(relay, c);
                return;
        }
}

/* ---------------------------------------------------------------------------------- the loop */

static void relay_accept(Relay *relay, uint64_t now) {
        size_t cap = (size_t) relay->cfg->egress_max_connections + EXTRA_CLIENTS;

        while (relay->n_conns < cap) {
                Conn *c;
                int fd;

                fd = accept4(relay->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        /* EMFILE, ENOBUFS, ...: no more accepting until a connection ends */
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                relay->accept_paused = true;
                        return;
                }
                if (relay->n_conns == relay->allocated) {
                        size_t na = relay->allocated ? relay->allocated * 2 : 16;
                        Conn **l = reallocarray(relay->conns, na, sizeof(Conn *));
                        if (!l) {
                                (void) safe_close(fd);
                                return;
                        }
                        relay->conns = l;
                        relay->allocated = na;
                }
                c = calloc(1, sizeof(Conn));
                if (!c) {
                        (void) safe_close(fd);
                        return;
                }
                *c = (Conn){ .state = CONN_HEAD,
                             .client = fd,
                             .upstream = -EBADF,
                             .deadline = now + HEAD_TIMEOUT_USEC };
                relay->conns[relay->n_conns++] = c;
        }
}

static void relay_check_resolutions(Relay *relay, uint64_t now) {
        struct signalfd_siginfo si;

        while (read(relay->signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                ; /* coalesced: every pending lookup is looked at below */

        for (size_t i = 0; i < relay->n_conns; i++)
                if (relay->conns[i]->state == CONN_RESOLVING)
                        conn_check_resolution(relay, relay->conns[i], now);

        for (size_t i = 0; i < relay->n_orphans;) {
                if (gai_error(&relay->orphans[i]->cb) == EAI_INPROGRESS) {
                        i++;
                        continue;
                }
                resolution_free(relay->orphans[i]);
                relay->orphans[i] = relay->orphans[--relay->n_orphans];
        }
}

static void relay_spend_budget(Relay *relay, uint64_t now) {
        if (relay->budget_spent || relay->bytes < relay->cfg->egress_max_bytes)
                return;
        relay->budget_spent = true;
        relay_log_budget(relay);
        for (size_t i = 0; i < relay->n_conns; i++) {
                Conn *c = relay->conns[i];
                if (c->state == CONN_RELAY)
                        conn_kill(relay, c);
                else if (c->state == CONN_RESOLVING || c->state == CONN_CONNECTING ||
                         c->state == CONN_HANDSHAKE)
                        conn_replyf(relay, c, 503, now,
                                    "the run has used its egress byte budget (egress_max_bytes %" PRIu64 ")",
                                    relay->cfg->egress_max_bytes);
        }
}

static short client_events(const Conn *c) {
        switch (c->state) {
        case CONN_HEAD:
                return POLLIN;
        case CONN_RELAY:
                return (short) ((!c->client_eof && buffer_has_room(&c->in) ? POLLIN : 0) |
                                (buffer_len(&c->out) > 0 ? POLLOUT : 0));
        case CONN_REPLY:
                return c->lingering ? POLLIN : POLLOUT;
        default:
                /* RESOLVING, CONNECTING, HANDSHAKE: nothing is read before the way is open, and a client
                 * that gave up is noticed then. */
                return 0;
        }
}

static short upstream_events(const Conn *c) {
        switch (c->state) {
        case CONN_CONNECTING:
                return POLLOUT;
        case CONN_HANDSHAKE:
                return (short) (POLLIN | (buffer_len(&c->tx) > 0 ? POLLOUT : 0));
        case CONN_RELAY:
                return (short) ((!c->upstream_eof && buffer_has_room(&c->out) ? POLLIN : 0) |
                                (buffer_len(&c->tx) > 0 || buffer_len(&c->in) > 0 ? POLLOUT : 0));
        default:
                return 0;
        }
}

static _Noreturn void relay_serve(Relay *relay) {
        for (;;) {
                size_t n = 2 + 2 * relay->n_conns, n_conns = relay->n_conns;
                uint64_t now = now_usec(), deadline = UINT64_MAX;
                int timeout = -1;

                if (n > relay->pfds_allocated) {
                        struct pollfd *p = reallocarray(relay->pfds, n, sizeof(struct pollfd));
                        if (!p)
                                _exit(EXIT_FAILURE); /* the run's connections fail closed */
                        relay->pfds = p;
                        relay->pfds_allocated = n;
                }
                relay->pfds[0] = (struct pollfd){ .fd = relay->accept_paused ? -1 : relay->listener,
                                                  .events = POLLIN };
                relay->pfds[1] = (struct pollfd){ .fd = relay->signal_fd, .events = POLLIN };
                for (size_t i = 0; i < n_conns; i++) {
                        Conn *c = relay->conns[i];
                        short ce = client_events(c), ue = upstream_events(c);

                        /* A negative fd is skipped: no POLLHUP spinning for a side we wait nothing from. */
                        relay->pfds[2 + 2 * i] = (struct pollfd){ .fd = ce ? c->client : -1, .events = ce };
                        relay->pfds[3 + 2 * i] =
                                (struct pollfd){ .fd = ue ? c->upstream : -1, .events = ue };
                        if (c->deadline < deadline)
                                deadline = c->deadline;
                }
                if (deadline != UINT64_MAX)
                        timeout = deadline <= now
                                          ? 0
                                          : (int) ((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC);

                if (poll(relay->pfds, n, timeout) < 0 && errno != EINTR)
                        _exit(EXIT_FAILURE);
                now = now_usec();

                if (relay->pfds[1].revents)
                        relay_check_resolutions(relay, now);
                for (size_t i = 0; i < n_conns; i++) {
                        Conn *c = relay->conns[i];
                        short cr = relay->pfds[2 + 2 * i].revents, ur = relay->pfds[3 + 2 * i].revents;

                        if (c->state != CONN_DEAD && ur)
                                conn_on_upstream(relay, c, ur, now);
                        if (c->state != CONN_DEAD && cr)
                                conn_on_client(relay, c, cr, now);
                        if (c->state == CONN_DEAD)
                                continue;
                        conn_settle(c);
                        if (conn_finished(c))
                                conn_kill(relay, c);
                        else if (now >= c->deadline)
                                conn_on_timeout(relay, c, now);
                }
                relay_spend_budget(relay, now);

                for (size_t i = 0; i < relay->n_conns;) {
                        if (relay->conns[i]->state != CONN_DEAD) {
                                i++;
                                continue;
                        }
                        (void) conn_free(relay->conns[i]);
                        relay->conns[i] = relay->conns[--relay->n_conns];
                        relay->accept_paused = false;
                }
                if (relay->pfds[0].revents)
                        relay_accept(relay, now);
        }
}

/* ------------------------------------------------------------------------- the relay process */

/* libsystemd keeps one unconnected, unbound AF_UNIX datagram socket for the journal and never reopens it;
 * it must survive the closing of fds, or sd_journal_send() would write to whatever gets its number. Such a
 * socket gives nothing socket(2) would not. */
static bool fd_is_unnamed_datagram_socket(int fd) {
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        int domain, type;
        socklen_t l = sizeof(int);

        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0 || domain != AF_UNIX)
                return false;
        l = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_DGRAM)
                return false;
        if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0 || len > sizeof(sa_family_t))
                return false;
        len = sizeof(sa);
        return getpeername(fd, (struct sockaddr *) &sa, &len) < 0 && errno == ENOTCONN;
}

/* Closes every fd but stdin/stdout (made /dev/null), stderr (where logging falls back to), the ones in
 * keep, and libsystemd's journal socket. */
static int close_other_fds(const int *keep, size_t n_keep) {
        _cleanup_free_ int *doomed = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        DIR *d;
        int null_fd;

        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                return -errno;
        if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
                (void) safe_close(null_fd);
                return -errno;
        }
        (void) safe_close(null_fd);

        d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                uint32_t fd;
                bool kept = false;

                if (parse_uint32(de->d_name, &fd) < 0 || fd <= STDERR_FILENO || (int) fd == dirfd(d))
                        continue;
                for (size_t i = 0; i < n_keep; i++)
                        kept = kept || keep[i] == (int) fd;
                if (kept || fd_is_unnamed_datagram_socket((int) fd))
                        continue;
                if (n == allocated) {
                        size_t na = allocated ? allocated * 2 : 64;
                        int *p = reallocarray(doomed, na, sizeof(int));
                        if (!p) {
                                (void) closedir(d);
                                return -ENOMEM;
                        }
                        doomed = p;
                        allocated = na;
                }
                doomed[n++] = (int) fd;
        }
        (void) closedir(d);
        for (size_t i = 0; i < n; i++)
                (void) close(doomed[i]);
        return 0;
}

DEFINE_POINTER_CLEANUP(cap_t, cap_free);

/* fd, moved above stderr if it is not already: stdin and stdout become /dev/null. */
static int lift(int fd) {
        return fd > STDERR_FILENO ? fd : fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
}

static int relay_setup(Relay *relay, int *status_fd, pid_t parent) {
        _cleanup_(cap_freep) cap_t none = NULL;
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t mask;
        int r;

        /* If the worker dies, so does its relay; and it must not have died already. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        if (getppid() != parent)
                return -ESRCH;

        /* The worker's handlers mean nothing here. SIGPIPE: a client that went away is an error return. */
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL); /* EINVAL for glibc's reserved ones only */
        sa.sa_handler = SIG_IGN;
        if (sigaction(SIGPIPE, &sa, NULL) < 0)
                return -errno;
        if (sigemptyset(&mask) < 0 || sigaddset(&mask, RESOLVE_SIGNAL) < 0 ||
            sigprocmask(SIG_SETMASK, &mask, NULL) < 0)
                return -errno;

        relay->listener = lift(relay->listener);
        relay->denial_fd = lift(relay->denial_fd);
        *status_fd = lift(*status_fd);
        if (relay->listener < 0 || relay->denial_fd < 0 || *status_fd < 0)
                return -errno;
        r = close_other_fds((const int[]){ relay->listener, relay->denial_fd, *status_fd }, 3);
        if (r < 0)
                return r;
        if (chdir("/") < 0)
                return -errno;

        /* Nobody, without capabilities, bounding set empty, no_new_privs: connecting out needs nothing. No
         * thread exists yet (glibc starts its resolver threads later), so the raw id syscalls of creds.c
         * change the whole process. */
        none = cap_init();
        if (!none)
                return -errno;
        r = creds_drop(RELAY_UID, RELAY_GID, none);
        if (r < 0)
                return r;
        /* Every run's relay is nobody: none may ptrace or read the memory of another. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return -errno;
        /* Changing the effective IDs cleared the parent-death signal: set it again, and check again that
         * the worker did not die in between. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        if (getppid() != parent)
                return -ESRCH;

        relay->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (relay->signal_fd < 0)
                return -errno;
        if (fcntl(relay->listener, F_SETFL, fcntl(relay->listener, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

static _Noreturn void relay_main(Relay *relay, int status_fd, pid_t parent) {
        int r;

        r = relay_setup(relay, &status_fd, parent);
        (void) !write(status_fd, &r, sizeof(r)); /* if even this fails, the parent sees EOF */
        if (r < 0)
                _exit(EXIT_FAILURE);
        (void) safe_close(status_fd);
        relay_serve(relay);
}

/* ----------------------------------------------------------------------------- the worker side */

static void relay_done(Relay *relay) {
        relay->policy = egress_policy_free(relay->policy);
        free(relay->run_id);
        upstream_done(&relay->http);
        upstream_done(&relay->https);
        upstream_done(&relay->socks5);
        relay->no_proxy = strv_free(relay->no_proxy);
        relay->denial_fd = safe_close(relay->denial_fd);
}

static int listener_check(int fd) {
        int v;
        socklen_t l = sizeof(v);

        if (fd < 0)
                return -EBADF;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0)
                return -errno;
        if (v != AF_INET && v != AF_INET6)
                return -EINVAL;
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0)
                return -errno;
        if (v != SOCK_STREAM)
                return -EINVAL;
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) < 0)
                return -errno;
        return v ? 0 : -EINVAL;
}

/* Waits for the relay's word that it runs unprivileged: 0 or its -errno. */
static int relay_wait_ready(int status_fd) {
        struct pollfd p = { .fd = status_fd, .events = POLLIN };
        int status;
        ssize_t n;
        int r;

        do
                r = poll(&p, 1, START_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        n = read(status_fd, &status, sizeof(status));
        if (n < 0)
                return -errno;
        if (n != (ssize_t) sizeof(status))
                return -ECHILD; /* died before saying anything */
        return status > 0 ? -EIO : status;
}

static void relay_kill(pid_t pid, int pidfd) {
        if (pidfd >= 0)
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        else
                (void) kill(pid, SIGKILL); /* not reaped yet: the PID is still ours */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

int egress_start(const Config *cfg, int listener_fd, const char *run_id, EgressRelay **ret) {
        _cleanup_(relay_done) Relay relay = {
                .cfg = cfg, .listener = listener_fd, .signal_fd = -EBADF, .denial_fd = -EBADF
        };
        _cleanup_close_ int status_r = -EBADF, status_w = -EBADF, denial_r = -EBADF, pidfd = -EBADF;
        _cleanup_free_ EgressRelay *r_relay = NULL;
        int status[2], denial[2];
        struct stat st;
        pid_t parent, pid;
        int r;

        assert(cfg);
        assert(run_id);
        assert(ret);

        r = listener_check(listener_fd);
        if (r < 0)
                return r;
        for (const char *c = run_id; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
                        return -EINVAL;

        relay.run_id = strdup(run_id);
        if (!relay.run_id)
                return -ENOMEM;
        r = egress_policy_new_from_config(cfg, &relay.policy);
        if (r < 0)
                return r;
        r = upstream_parse(cfg->proxy_http, &relay.http);
        if (r < 0)
                return r;
        r = upstream_parse(cfg->proxy_https, &relay.https);
        if (r < 0)
                return r;
        r = upstream_parse(cfg->proxy_socks5, &relay.socks5);
        if (r < 0)
                return r;
        r = no_proxy_parse(cfg->proxy_no_proxy, &relay.no_proxy);
        if (r < 0)
                return r;
        /* As log.c decides: the journal when stderr is not already it and its socket exists. */
        relay.journal = getenv("JOURNAL_STREAM") && stat("/run/systemd/journal/socket", &st) == 0;

        r_relay = calloc(1, sizeof(EgressRelay));
        if (!r_relay)
                return -ENOMEM;
        if (pipe2(status, O_CLOEXEC) < 0)
                return -errno;
        status_r = status[0];
        status_w = status[1];
        if (pipe2(denial, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        denial_r = denial[0];
        relay.denial_fd = denial[1];

        /* fork(), not clone(): the relay lives on, mallocs and starts resolver threads, so glibc must know
         * it is a new process. The worker is single-threaded. */
        parent = getpid();
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                relay_main(&relay, status_w, parent);

        status_w = safe_close(status_w);
        relay.denial_fd = safe_close(relay.denial_fd);
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = -errno;
                relay_kill(pid, -EBADF);
                return r;
        }
        r = relay_wait_ready(status_r);
        if (r < 0) {
                relay_kill(pid, pidfd);
                return r;
        }

        *r_relay = (EgressRelay){ .pid = pid, .pidfd = TAKE_FD(pidfd), .denial_fd = TAKE_FD(denial_r) };
        *ret = TAKE_PTR(r_relay);
        return 0;
}

EgressRelay *egress_stop(EgressRelay *relay) {
        if (!relay)
                return NULL;
        relay_kill(relay->pid, relay->pidfd);
        (void) safe_close(relay->pidfd);
        (void) safe_close(relay->denial_fd);
        free(relay);
        return NULL;
}

unsigned egress_denials(const EgressRelay *relay) {
        int n = 0;

        if (!relay || ioctl(relay->denial_fd, FIONREAD, &n) < 0 || n < 0)
                return 0;
        return (unsigned) n;
}

uint64_t egress_cpu_usec(const EgressRelay *relay) {
        struct timespec ts;
        clockid_t clock;

        /* The relay is our child and not reaped before egress_stop(), so its PID is still its own. */
        if (!relay || clock_getcpuclockid(relay->pid, &clock) != 0 || clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}
