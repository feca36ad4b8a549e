/* relay: the egress relay's loop, in the relay process (egress.c starts it): a poll() over non-blocking
 * sockets, single-threaded except for glibc's resolver helpers (resolver.h). A client connection goes
 * through these states:
 *
 *   HEAD        reading the request head (16 KiB, 10 s)
 *   RESOLVING   getaddrinfo_a() of the destination, or of the upstream proxy when chained (5 s)
 *   CONNECTING  non-blocking connect() to each candidate address in turn; for a direct connection only to
 *               those the policy allows, checked on the very sockaddr passed to connect() (10 s in all)
 *   HANDSHAKE   chained: the upstream proxy's answer to CONNECT, or the SOCKS5 exchange (10 s)
 *   RELAY       bytes both ways until the destination is done, or egress_idle_timeout without traffic
 *   REPLY       our own answer (400, 403, 408, 431, 502, 503, 504), then a short lingering close */

#define SD_JOURNAL_SUPPRESS_LOCATION

#include "relay.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "buffer.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/time-util.h"
#include "egress-policy.h"
#include "egress.h"
#include "http-head.h"
#include "resolver.h"
#include "socks5.h"
#include "upstream.h"

#define HEAD_TIMEOUT_USEC (10 * USEC_PER_SEC)    /* for the whole request head */
#define RESOLVE_TIMEOUT_USEC (5 * USEC_PER_SEC)  /* getaddrinfo_a() */
#define CONNECT_TIMEOUT_USEC (10 * USEC_PER_SEC) /* every candidate address together */
#define HANDSHAKE_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define REPLY_TIMEOUT_USEC (5 * USEC_PER_SEC) /* to write our answer */
#define LINGER_USEC (2 * USEC_PER_SEC) /* reading what the client still sends, so it sees the answer */
#define EXTRA_CLIENTS 16U /* clients being read or answered beyond egress_max_connections; more wait */
/* Denials of one run logged one by one; after them one record says the rest are only counted (the run's
 * record has them all, EGRESS_DENIALS). A run once logged 2,010 denials in 3.5 s. */
#define DENIALS_LOGGED 5U

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

struct Relay {
        const Config *cfg;
        EgressPolicy *policy;
        char *run_id;
        Upstreams upstreams;
        bool journal; /* log to journald, as log.c decides; else to stderr */

        int listener, signal_fd, denial_fd; /* the caller's: relay_serve() only uses them */
        Conn **conns;
        size_t n_conns, allocated;
        size_t active; /* connections holding a slot */
        bool accept_paused;
        Resolver resolver;
        unsigned denials; /* so far, for the rate limit of their log records */
        uint64_t bytes;   /* relayed, both directions */
        bool budget_spent;
        struct pollfd *pfds;
        size_t pfds_allocated;
};

/* --------------------------------------------------------------------------------- logging */

static void relay_log_denial(const Relay *relay, const char *host, uint16_t port, const char *address,
                             const char *reason) {
        _cleanup_free_ char *destination = http_head_format_authority(host, port, true); /* "[::1]:80" */

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

static void conn_release_slot(Relay *relay, Conn *c) {
        if (!c->holds_slot)
                return;
        c->holds_slot = false;
        relay->active--;
}

static void conn_close_upstream(Relay *relay, Conn *c) {
        c->upstream = safe_close(c->upstream);
        resolver_abandon(&relay->resolver, TAKE_PTR(c->resolution));
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
        struct addrinfo *result = NULL;
        int r;

        r = resolver_start(name, port, &result, &c->resolution);
        if (r == -ENOMEM)
                conn_reply(relay, c, 503, "out of memory", now);
        else if (r < 0)
                conn_replyf(relay, c, 502, now, "cannot resolve '%s': the resolver is unavailable", name);
        else if (r == 0)
                conn_resolved(relay, c, result, now);
        else {
                c->state = CONN_RESOLVING;
                c->deadline = now + RESOLVE_TIMEOUT_USEC;
        }
}

static void conn_check_resolution(Relay *relay, Conn *c, uint64_t now) {
        struct addrinfo *result = NULL;
        int r;

        r = resolver_finish(c->resolution, &result);
        if (r == EAI_INPROGRESS)
                return;
        c->resolution = NULL;
        if (r != 0) {
                conn_replyf(relay, c, 502, now, "cannot resolve '%s': %s", c->via ? c->via->host : c->host,
                            gai_strerror(r));
                return;
        }
        conn_resolved(relay, c, result, now);
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
                        r = buffer_append(&c->out, buffer_data(&early), buffer_len(&early));
                buffer_done(&early);
                if (r < 0) {
                        conn_kill(relay, c);
                        return;
                }
        }
        if (buffer_len(&c->head) > 0 &&
            buffer_append(&c->tx, buffer_data(&c->head), buffer_len(&c->head)) < 0) {
                conn_kill(relay, c);
                return;
        }
        buffer_done(&c->head);
        buffer_done(&c->rx);
        c->state = CONN_RELAY;
        c->deadline = now + relay->cfg->egress_idle_timeout_usec;
}

/* The head of a plain request as the next hop gets it. */
static int conn_forward_head(Conn *c, const HttpRequest *req) {
        _cleanup_free_ char *authority = http_head_format_authority(c->host, c->port, c->port != 80);

        if (!authority)
                return -ENOMEM;
        if (c->via && c->via->route == ROUTE_HTTP_PROXY)
                return buffer_append_printf(
                        &c->head,
                        "%s http://%s%s HTTP/1.%u\r\nHost: %s\r\n%s%s%s%sConnection: close\r\n\r\n",
                        req->method, authority, req->path, req->minor, authority, req->headers,
                        c->via->authorization ? "Proxy-Authorization: " : "", c->via->authorization ?: "",
                        c->via->authorization ? "\r\n" : "");
        return buffer_append_printf(&c->head, "%s %s HTTP/1.%u\r\nHost: %s\r\n%sConnection: close\r\n\r\n",
                                    req->method, req->path, req->minor, authority, req->headers);
}

/* Connected to the next hop. */
static void conn_connected(Relay *relay, Conn *c, uint64_t now) {
        _cleanup_free_ char *authority = NULL;
        const uint8_t *greeting;
        size_t n;
        int r = 0;

        if (!c->via) {
                conn_start_relay(relay, c, now);
                return;
        }
        c->deadline = now + HANDSHAKE_TIMEOUT_USEC;
        if (c->via->route == ROUTE_SOCKS5) {
                c->socks_step = 0;
                c->state = CONN_HANDSHAKE;
                greeting = socks5_greeting(&n);
                if (buffer_append(&c->tx, greeting, n) < 0)
                        conn_kill(relay, c);
                return;
        }
        if (!c->tunnel) { /* the absolute-form head goes as it is */
                conn_start_relay(relay, c, now);
                return;
        }
        authority = http_head_format_authority(c->host, c->port, true);
        if (!authority)
                r = -ENOMEM;
        if (r >= 0)
                r = buffer_append_printf(&c->tx, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", authority,
                                         authority, c->via->authorization ? "Proxy-Authorization: " : "",
                                         c->via->authorization ?: "", c->via->authorization ? "\r\n" : "");
        if (r < 0) {
                conn_kill(relay, c);
                return;
        }
        c->state = CONN_HANDSHAKE;
}

/* The rest of what the upstream proxy sent after its answer goes to the client, and the relay starts. */
static void conn_handshake_done(Relay *relay, Conn *c, size_t answer_len, uint64_t now) {
        buffer_consume(&c->rx, answer_len);
        if (buffer_append(&c->out, buffer_data(&c->rx), buffer_len(&c->rx)) < 0) {
                conn_kill(relay, c);
                return;
        }
        conn_start_relay(relay, c, now);
}

/* The upstream HTTP proxy's answer to CONNECT, so far in rx. */
static void conn_http_handshake(Relay *relay, Conn *c, uint64_t now) {
        char shown[HTTP_HEAD_STATUS_SHOWN + 1];
        size_t end = http_head_end(buffer_data(&c->rx), buffer_len(&c->rx));
        unsigned status;

        if (end == 0) {
                if (buffer_len(&c->rx) >= HTTP_HEAD_MAX)
                        conn_replyf(relay, c, 502, now, "the upstream HTTP proxy sent an oversized answer");
                return;
        }
        status = http_head_parse_status(buffer_data(&c->rx), end, shown);
        if (status >= 200 && status < 300) {
                conn_handshake_done(relay, c, end, now);
                return;
        }
        conn_replyf(relay, c, status == 403 ? 403 : 502, now,
                    "the upstream HTTP proxy refused the tunnel: %s", shown);
}

/* The upstream SOCKS5 proxy's method choice, then its reply to CONNECT, so far in rx. */
static void conn_socks5_handshake(Relay *relay, Conn *c, uint64_t now) {
        uint8_t msg[SOCKS5_REQUEST_MAX], rep = 0;
        ssize_t n;
        int r;

        if (c->socks_step == 0) {
                r = socks5_parse_method(buffer_data(&c->rx), buffer_len(&c->rx));
                if (r == 0)
                        return;
                if (r < 0) {
                        conn_replyf(relay, c, 502, now,
                                    "the upstream SOCKS5 proxy %s:%u wants authentication", c->via->host,
                                    c->via->port);
                        return;
                }
                buffer_consume(&c->rx, (size_t) r);
                c->socks_step = 1;
                n = socks5_format_request(c->host, c->port, msg);
                if (n < 0 || buffer_append(&c->tx, msg, (size_t) n) < 0)
                        conn_kill(relay, c);
                return;
        }
        n = socks5_parse_reply(buffer_data(&c->rx), buffer_len(&c->rx), &rep);
        if (n == 0)
                return;
        if (n == -ECONNREFUSED)
                conn_replyf(relay, c, rep == SOCKS5_REP_NOT_ALLOWED ? 403 : 502, now,
                            "the upstream SOCKS5 proxy refused %s:%u: %s", c->host, c->port,
                            socks5_reply_to_string(rep));
        else if (n < 0)
                conn_replyf(relay, c, 502, now, "the upstream SOCKS5 proxy sent a malformed reply");
        else
                conn_handshake_done(relay, c, (size_t) n, now);
}

static bool host_is_ip_literal(const char *host) {
        uint8_t a[16];

        return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* A whole request head is in c->in: check it, pick the route, and start resolving. */
static void conn_request(Relay *relay, Conn *c, size_t head_len, uint64_t now) {
        _cleanup_(http_head_request_done) HttpRequest req = { 0 };
        const char *reason = NULL;
        int r;

        r = http_head_parse_request(buffer_data(&c->in), head_len, &req, &reason);
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

        c->via = upstream_pick(&relay->upstreams, c->host, c->tunnel);

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
                n = buffer_read(&c->in, c->client, BUFFER_SIZE, HTTP_HEAD_MAX - buffer_len(&c->in));
                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        conn_kill(relay, c); /* gone before asking anything */
                        return;
                }
                end = http_head_end(buffer_data(&c->in), buffer_len(&c->in));
                if (end > 0)
                        conn_request(relay, c, end, now);
                else if (buffer_len(&c->in) >= HTTP_HEAD_MAX)
                        conn_reply(relay, c, 431, "the request head is larger than 16 KiB", now);
                return;
        }

        case CONN_RELAY:
                if (readable && !c->client_eof && buffer_has_room(&c->in)) {
                        n = buffer_read(&c->in, c->client, BUFFER_SIZE, budget_left(relay));
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
                        n = buffer_read(&c->in, c->client, BUFFER_SIZE, BUFFER_SIZE);
                        buffer_clear(&c->in);
                        if (n != -EAGAIN && n <= 0)
                                conn_kill(relay, c);
                }
                return;

        case CONN_CONNECTING:
        case CONN_DEAD:
        case CONN_HANDSHAKE:
        case CONN_RESOLVING:
                return;
        }
}

/* CONN_HANDSHAKE: our part of the exchange to the upstream proxy, and its answers into rx. */
static void conn_upstream_handshake_io(Relay *relay, Conn *c, bool readable, bool writable, uint64_t now) {
        ssize_t n;

        if (writable && buffer_len(&c->tx) > 0) {
                n = buffer_write(&c->tx, c->upstream);
                if (n < 0 && n != -EAGAIN) {
                        conn_replyf(relay, c, 502, now, "lost the upstream %s: %s", upstream_name(c->via),
                                    strerror((int) -n));
                        return;
                }
        }
        if (readable) {
                n = buffer_read(&c->rx, c->upstream, HTTP_HEAD_MAX, budget_left(relay));
                if (n == 0 || (n < 0 && n != -EAGAIN)) {
                        conn_replyf(relay, c, 502, now, "the upstream %s closed the connection",
                                    upstream_name(c->via));
                        return;
                }
                if (n > 0) {
                        relay->bytes += (uint64_t) n;
                        if (c->via->route == ROUTE_HTTP_PROXY)
                                conn_http_handshake(relay, c, now);
                        else
                                conn_socks5_handshake(relay, c, now);
                }
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
                conn_upstream_handshake_io(relay, c, readable, writable, now);
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
                        n = buffer_read(&c->out, c->upstream, BUFFER_SIZE, budget_left(relay));
                        if (n > 0) {
                                relay->bytes += (uint64_t) n;
                                c->deadline = now + relay->cfg->egress_idle_timeout_usec;
                        } else if (n != -EAGAIN)
                                c->upstream_eof = true; /* EOF, or a reset: deliver what came before it */
                }
                return;

        case CONN_DEAD:
        case CONN_HEAD:
        case CONN_REPLY:
        case CONN_RESOLVING:
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
        case CONN_DEAD:
        case CONN_RELAY:
        case CONN_REPLY:
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

        resolver_reap(&relay->resolver);
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
        case CONN_CONNECTING:
        case CONN_DEAD:
        case CONN_HANDSHAKE:
        case CONN_RESOLVING:
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
        case CONN_DEAD:
        case CONN_HEAD:
        case CONN_REPLY:
        case CONN_RESOLVING:
        default:
                return 0;
        }
}

_Noreturn void relay_serve(Relay *relay, int listener_fd, int signal_fd, int denial_fd) {
        relay->listener = listener_fd;
        relay->signal_fd = signal_fd;
        relay->denial_fd = denial_fd;
        for (;;) {
                size_t n = 2 + 2 * relay->n_conns, n_conns = relay->n_conns;
                uint64_t now_usec = now(CLOCK_MONOTONIC), deadline = UINT64_MAX;
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
                        timeout = usec_to_poll_timeout(deadline <= now_usec ? 0 : deadline - now_usec);

                if (poll(relay->pfds, n, timeout) < 0 && errno != EINTR)
                        _exit(EXIT_FAILURE);
                now_usec = now(CLOCK_MONOTONIC);

                if (relay->pfds[1].revents)
                        relay_check_resolutions(relay, now_usec);
                for (size_t i = 0; i < n_conns; i++) {
                        Conn *c = relay->conns[i];
                        short cr = relay->pfds[2 + 2 * i].revents, ur = relay->pfds[3 + 2 * i].revents;

                        if (c->state != CONN_DEAD && ur)
                                conn_on_upstream(relay, c, ur, now_usec);
                        if (c->state != CONN_DEAD && cr)
                                conn_on_client(relay, c, cr, now_usec);
                        if (c->state == CONN_DEAD)
                                continue;
                        conn_settle(c);
                        if (conn_finished(c))
                                conn_kill(relay, c);
                        else if (now_usec >= c->deadline)
                                conn_on_timeout(relay, c, now_usec);
                }
                relay_spend_budget(relay, now_usec);

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
                        relay_accept(relay, now_usec);
        }
}

int relay_new(const Config *cfg, const char *run_id, Relay **ret) {
        _cleanup_(relay_freep) Relay *relay = NULL;
        int r;

        relay = calloc(1, sizeof(Relay));
        if (!relay)
                return -ENOMEM;
        *relay = (Relay){ .cfg = cfg, .listener = -EBADF, .signal_fd = -EBADF, .denial_fd = -EBADF };
        relay->run_id = strdup(run_id);
        if (!relay->run_id)
                return -ENOMEM;
        r = egress_policy_new_from_config(cfg, &relay->policy);
        if (r < 0)
                return r;
        r = upstream_load(cfg, &relay->upstreams);
        if (r < 0)
                return r;
        relay->journal = log_use_journal(); /* as every line of ours decides (log.c) */
        *ret = TAKE_PTR(relay);
        return 0;
}

Relay *relay_free(Relay *relay) {
        if (!relay)
                return NULL;
        for (size_t i = 0; i < relay->n_conns; i++) {
                conn_kill(relay, relay->conns[i]);
                (void) conn_free(relay->conns[i]);
        }
        free(relay->conns);
        free(relay->pfds);
        resolver_done(&relay->resolver);
        relay->policy = egress_policy_free(relay->policy);
        upstream_unload(&relay->upstreams);
        free(relay->run_id);
        free(relay);
        return NULL;
}
