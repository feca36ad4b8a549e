#pragma once
/* http: owns one client connection of a worker process (DESIGN §2): libmicrohttpd on an already
 * accepted socket, driven on the calling thread, its requests in turn (keep-alive), each handed to
 * api.h; the limits that protect a worker from its client (body and header size, idle and slow-request
 * timeouts), and a lingering close after refusing a body, so the client reads the refusal instead of a
 * reset; and the journal record of each request. Everything runs on the main thread, because the
 * sandbox's children die with the thread that created them (PR_SET_PDEATHSIG). */

#include <stdbool.h>

typedef struct Config Config;

/* Serves the connection on fd until it is closed, by either side or by a limit, then returns. Takes fd
 * (libmicrohttpd closes it). Returns 0, or a negative errno when the connection could not be served
 * at all (logged). Blocks SIGTERM and SIGINT while a request is in progress, so that a stop lets it
 * finish; between requests either signal ends the process at once.
 *
 * reloadable: cfg came from the default places (config_setup(NULL)), so when difysandbox-manager
 * publishes a new configuration, the next request on this connection loads it and uses it. */
int http_serve_connection(const Config *cfg, bool reloadable, int fd);
