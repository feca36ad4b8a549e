/* metrics: the HTTP side of the Prometheus endpoint; see metrics.h. One request per connection
 * (Connection: close), as Prometheus scrapes: read the head, answer, close. */

#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/strv.h"
#include "common/time-util.h"
#include "manager.h"

#define METRICS_CONN_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define METRICS_LISTEN_MAX 8U
#define OS_RELEASE_MAX 65536U
#define RELEASE_MAX 64U
#define SOCKET_UNIT_PATH "/org/freedesktop/systemd1/unit/difysandbox_2esocket"

typedef struct MetricsConn MetricsConn;

struct Metrics {
        Manager *manager;
        sd_event_source *listen[METRICS_LISTEN_MAX];
        unsigned n_listen;
        MetricsConn *conns; /* a list */
        unsigned n_conns;
        MetricsSocketState socket;
        struct SocketQuestion *questions; /* _SOCKET_PROPERTY_MAX of them, to systemd */
        char release[RELEASE_MAX];
};

struct MetricsConn {
        Metrics *metrics;
        MetricsConn *next, *prev;
        int fd;
        sd_event_source *io, *timer;
        char head[METRICS_REQUEST_MAX];
        size_t head_len;
        char *out; /* the whole answer, head and body */
        size_t out_len, out_pos;
};

static MetricsConn *conn_free(MetricsConn *c) {
        if (!c)
                return NULL;
        if (c->prev)
                c->prev->next = c->next;
        else
                c->metrics->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->metrics->n_conns--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        if (c->fd >= 0)
                (void) close(c->fd);
        free(c->out);
        free(c);
        return NULL;
}

/* ---- what systemd says of difysandbox.socket ---- */

/* One Get each: GetAll of the Socket interface would make PID 1 serialize its whole exec and cgroup
 * context (hundreds of properties) at every scrape. */
typedef enum SocketProperty {
        SOCKET_N_ACCEPTED,
        SOCKET_N_CONNECTIONS,
        SOCKET_N_REFUSED,
        SOCKET_ACTIVE_STATE,
        _SOCKET_PROPERTY_MAX,
} SocketProperty;

/* clang-format off */
static const struct {
        const char *interface, *name;
} socket_properties[_SOCKET_PROPERTY_MAX] = {
        [SOCKET_N_ACCEPTED]    = { "org.freedesktop.systemd1.Socket", "NAccepted"    },
        [SOCKET_N_CONNECTIONS] = { "org.freedesktop.systemd1.Socket", "NConnections" },
        [SOCKET_N_REFUSED]     = { "org.freedesktop.systemd1.Socket", "NRefused"     }, /* systemd 239+ */
        [SOCKET_ACTIVE_STATE]  = { "org.freedesktop.systemd1.Unit",   "ActiveState"  },
};
/* clang-format on */

typedef struct SocketQuestion {
        Metrics *metrics;
        SocketProperty property;
        sd_bus_slot *slot; /* while the question is pending */
} SocketQuestion;

static int on_socket_property(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        SocketQuestion *q = userdata;
        MetricsSocketState *st = &q->metrics->socket;
        const char *state;
        int r;

        q->slot = sd_bus_slot_unref(q->slot);
        if (sd_bus_message_is_method_error(reply, NULL))
                return 0; /* keep what we had; no systemd, or no NRefused (systemd < 239) */
        switch (q->property) {
        case SOCKET_N_ACCEPTED:
                r = sd_bus_message_read(reply, "v", "u", &st->n_accepted);
                st->known = r >= 0 || st->known;
                break;
        case SOCKET_N_CONNECTIONS:
                r = sd_bus_message_read(reply, "v", "u", &st->n_connections);
                break;
        case SOCKET_N_REFUSED:
                r = sd_bus_message_read(reply, "v", "u", &st->n_refused);
                st->has_refused = r >= 0 || st->has_refused;
                break;
        case SOCKET_ACTIVE_STATE:
                r = sd_bus_message_read(reply, "v", "s", &state);
                if (r >= 0)
                        st->failed = streq(state, "failed");
                break;
        case _SOCKET_PROPERTY_MAX:
        default:
                r = -EINVAL;
                break;
        }
        if (r < 0)
                log_debug_errno(r, "Cannot read %s of difysandbox.socket: %m",
                                socket_properties[q->property].name);
        return 0;
}

/* Asks systemd, without waiting: the answers land in x->socket for the next scrape. */
static void socket_state_refresh(Metrics *x) {
        sd_bus *bus = x->manager->bus;

        if (!bus)
                return;
        for (SocketProperty p = 0; p < _SOCKET_PROPERTY_MAX; p++) {
                SocketQuestion *q = &x->questions[p];
                int r;

                if (q->slot)
                        continue; /* still pending: systemd is busy, do not pile up */
                q->metrics = x;
                q->property = p;
                r = sd_bus_call_method_async(bus, &q->slot, "org.freedesktop.systemd1", SOCKET_UNIT_PATH,
                                             "org.freedesktop.DBus.Properties", "Get", on_socket_property, q,
                                             "ss", socket_properties[p].interface,
                                             socket_properties[p].name);
                if (r < 0)
                        log_debug_errno(r, "Cannot ask systemd about difysandbox.socket: %m");
        }
}

/* ---- one exchange ---- */

static int conn_answer(MetricsConn *c, const char *status, const char *extra, const char *body,
                       size_t body_len, bool head_only) {
        _cleanup_free_ char *out = NULL;
        int n;

        n = asprintf(&out,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
                     status, body ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8",
                     body ? body_len : strlen(status) + 1, extra ? extra : "");
        if (n < 0)
                return -ENOMEM;
        if (!head_only) {
                const char *b = body ? body : status;
                size_t blen = body ? body_len : strlen(status);
                char *grown = realloc(out, (size_t) n + blen + 2);

                if (!grown)
                        return -ENOMEM;
                out = grown;
                memcpy(out + n, b, blen);
                n += (int) blen;
                if (!body)
                        out[n++] = '\n';
                out[n] = '\0';
        }
        c->out_len = (size_t) n;
        c->out = TAKE_PTR(out);
        return 0;
}

/* The request line of a complete head: GET or HEAD of /metrics (any query ignored), else 404 or 405. */
static int conn_respond(MetricsConn *c) {
        Metrics *x = c->metrics;
        _cleanup_free_ char *text = NULL;
        size_t method_len, len = 0;
        const char *target;
        bool head;
        int r;

        method_len = strcspn(c->head, " \r\n");
        if (c->head[method_len] != ' ')
                return conn_answer(c, "400 Bad Request", NULL, NULL, 0, false);
        head = method_len == 4 && memcmp(c->head, "HEAD", 4) == 0;
        if (!head && !(method_len == 3 && memcmp(c->head, "GET", 3) == 0))
                return conn_answer(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", NULL, 0, false);
        target = c->head + method_len + 1;
        if (strncmp(target, "/metrics", 8) != 0 || !strchr(" ?", target[8]))
                return conn_answer(c, "404 Not Found", NULL, NULL, 0, head);

        r = metrics_format(x->manager, &x->socket, x->release, &text, &len);
        socket_state_refresh(x);
        if (r < 0) {
                log_error_errno(r, "Cannot make the metrics: %m");
                return conn_answer(c, "500 Internal Server Error", NULL, NULL, 0, head);
        }
        return conn_answer(c, "200 OK", NULL, text, len, head);
}

static int conn_write(MetricsConn *c) {
        while (c->out_pos < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_pos, c->out_len - c->out_pos, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return sd_event_source_set_io_events(c->io, EPOLLOUT);
                        conn_free(c);
                        return 0;
                }
                c->out_pos += (size_t) n;
        }
        (void) shutdown(c->fd, SHUT_WR);
        conn_free(c);
        return 0;
}

static int conn_read(MetricsConn *c) {
        ssize_t n;

        n = recv(c->fd, c->head + c->head_len, sizeof(c->head) - 1 - c->head_len, 0);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                conn_free(c);
                return 0;
        }
        if (n == 0) { /* closed before its head was in */
                conn_free(c);
                return 0;
        }
        c->head_len += (size_t) n;
        c->head[c->head_len] = '\0';
        if (!strstr(c->head, "\r\n\r\n") && !strstr(c->head, "\n\n")) {
                if (c->head_len < sizeof(c->head) - 1)
                        return 0;
                if (conn_answer(c, "431 Request Header Fields Too Large", NULL, NULL, 0, false) < 0) {
                        conn_free(c);
                        return 0;
                }
        } else if (conn_respond(c) < 0) {
                conn_free(c);
                return 0;
        }
        return conn_write(c);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        MetricsConn *c = userdata;

        if (c->out)
                return conn_write(c);
        return conn_read(c);
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        conn_free(userdata);
        return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Metrics *x = userdata;

        for (;;) {
                MetricsConn *c;
                int cfd, r;

                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(-errno,
                                                  "Cannot accept a metrics connection, ignoring: %m");
                        return 0;
                }
                if (x->n_conns >= METRICS_CONNS_MAX) {
                        (void) close(cfd); /* bounded: a scraper needs one at a time */
                        continue;
                }
                c = calloc(1, sizeof(*c));
                if (!c) {
                        (void) close(cfd);
                        return 0;
                }
                c->metrics = x;
                c->fd = cfd;
                c->next = x->conns;
                if (x->conns)
                        x->conns->prev = c;
                x->conns = c;
                x->n_conns++;
                r = sd_event_add_io(x->manager->event, &c->io, cfd, EPOLLIN, on_conn_io, c);
                if (r >= 0)
                        r = sd_event_add_time_relative(x->manager->event, &c->timer, CLOCK_MONOTONIC,
                                                       METRICS_CONN_TIMEOUT_USEC, 0, on_conn_timeout, c);
                if (r < 0) {
                        log_warning_errno(r, "Cannot serve a metrics connection, ignoring: %m");
                        conn_free(c);
                }
        }
}

/* ---- start and end ---- */

static bool release_char_ok(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '.' || ch == '-' || ch == '_';
}

/* "<ID>-<VERSION_ID>" of os-release (debian-12), cut to the characters a label needs no escape for;
 * "unknown" without the file. */
static void release_read(char ret[RELEASE_MAX]) {
        _cleanup_free_ char *text = NULL;
        char id[RELEASE_MAX / 2] = "", version[RELEASE_MAX / 2] = "";

        snprintf(ret, RELEASE_MAX, "unknown");
        if (read_full_file("/etc/os-release", OS_RELEASE_MAX, &text, NULL) < 0 &&
            read_full_file("/usr/lib/os-release", OS_RELEASE_MAX, &text, NULL) < 0)
                return;
        for (char *line = text, *next; line && *line; line = next) {
                char *value, *dst = NULL;
                size_t i = 0;

                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, "ID=", 3) == 0)
                        dst = id, value = line + 3;
                else if (strncmp(line, "VERSION_ID=", 11) == 0)
                        dst = version, value = line + 11;
                else
                        continue;
                for (; *value && i < RELEASE_MAX / 2 - 1; value++)
                        if (release_char_ok(*value))
                                dst[i++] = *value;
                dst[i] = '\0';
        }
        if (id[0])
                snprintf(ret, RELEASE_MAX, "%s%s%s", id, version[0] ? "-" : "", version);
}

int metrics_start(Manager *m, Metrics **ret) {
        _cleanup_strv_free_ char **names = NULL;
        Metrics *x = NULL;
        int n, r;

        *ret = NULL;
        n = sd_listen_fds_with_names(/* unset_environment= */ true, &names);
        if (n < 0)
                return log_error_errno(n, "Cannot read the sockets systemd passed: %m");
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;

                if (!names || !names[i] || !streq(names[i], METRICS_FD_NAME)) {
                        log_warning("Ignoring socket %i (named '%s'): not ours", fd,
                                    names && names[i] ? names[i] : "");
                        continue;
                }
                if (!x) {
                        x = calloc(1, sizeof(*x));
                        if (!x)
                                return log_error_errno(-ENOMEM, "Cannot serve metrics: %m");
                        *ret = x; /* the caller frees it, also on failure */
                        x->manager = m;
                        x->questions = calloc(_SOCKET_PROPERTY_MAX, sizeof(*x->questions));
                        if (!x->questions)
                                return log_error_errno(-ENOMEM, "Cannot serve metrics: %m");
                        release_read(x->release);
                        *ret = x;
                }
                if (x->n_listen >= METRICS_LISTEN_MAX) {
                        log_warning("Ignoring metrics socket %i: more than %u", fd, METRICS_LISTEN_MAX);
                        continue;
                }
                /* accept() must not block the loop when a connection is gone before we take it */
                if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
                        return log_error_errno(-errno, "Cannot make the metrics socket non-blocking: %m");
                r = sd_event_add_io(m->event, &x->listen[x->n_listen], fd, EPOLLIN, on_listen, x);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch the metrics socket: %m");
                x->n_listen++;
        }
        if (x) {
                socket_state_refresh(x);
                log_info("Serving metrics on %u socket%s", x->n_listen, x->n_listen == 1 ? "" : "s");
        }
        return 0;
}

Metrics *metrics_free(Metrics *x) {
        if (!x)
                return NULL;
        while (x->conns)
                conn_free(x->conns);
        for (unsigned i = 0; i < x->n_listen; i++)
                sd_event_source_disable_unref(x->listen[i]);
        if (x->questions)
                for (SocketProperty p = 0; p < _SOCKET_PROPERTY_MAX; p++)
                        sd_bus_slot_unref(x->questions[p].slot);
        free(x->questions);
        free(x);
        return NULL;
}
