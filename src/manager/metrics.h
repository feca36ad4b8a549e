#pragma once
/* metrics: the manager's Prometheus endpoint (docs/monitoring.md). It owns the listening sockets that
 * difysandbox-metrics.socket passes to the manager (FileDescriptorName=metrics) and the HTTP exchanges on
 * them: GET /metrics answers the text exposition that metrics-format.c makes from the shared stats.
 *
 * Everything happens in the manager's event loop without blocking: sockets are non-blocking, a
 * connection lives at most METRICS_CONN_TIMEOUT_USEC, at most METRICS_CONNS_MAX are open at once (more
 * are closed at accept), and nothing it reads waits for a run (the stats are atomic loads of a shared
 * mapping; free UIDs come from /proc/locks). The counters of difysandbox.socket come from systemd over
 * D-Bus, asked asynchronously after each scrape: a scrape shows what systemd said at the previous one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Manager Manager;
typedef struct Metrics Metrics;

#define METRICS_FD_NAME "metrics" /* FileDescriptorName= of difysandbox-metrics.socket */
#define METRICS_CONNS_MAX 16U
#define METRICS_REQUEST_MAX 4096U /* a request head larger than this is answered 431 */

/* What systemd says of difysandbox.socket; known is false until it answered once. */
typedef struct MetricsSocketState {
        bool known;
        bool has_refused; /* NRefused exists: systemd 239 and later */
        bool failed;      /* ActiveState is "failed" */
        uint32_t n_accepted, n_connections, n_refused;
} MetricsSocketState;

/* Serves every socket passed as METRICS_FD_NAME. 0 with *ret NULL when none was passed (the manager was
 * started by D-Bus activation, or the socket unit is not enabled). */
int metrics_start(Manager *m, Metrics **ret);
Metrics *metrics_free(Metrics *x); /* NULL-safe, returns NULL */

/* The exposition, in a malloc()ed text. release is the build_info label (the OS release). */
int metrics_format(Manager *m, const MetricsSocketState *sock, const char *release, char **ret_text,
                   size_t *ret_len);
