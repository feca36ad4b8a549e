#pragma once
/* http: owns one client connection of a worker process (DESIGN §2): libmicrohttpd on an already
 * accepted socket, driven on the calling thread, its requests in turn (keep-alive), each handed to
 * api.h; the limits that protect a worker from its client (body and header size, idle and slow-request
 * timeouts), and a lingering close after refusing a body, so the client reads the refusal instead of a
 * reset; and the journal record of each request. Everything runs on the main thread. */

#include <stdbool.h>
#include <stdint.h>

typedef struct Config Config;
typedef struct ConnSlot ConnSlot;
typedef struct RunnerClient RunnerClient;

/* Serves the connection on fd until it is closed, by either side or by a limit, then returns. Takes fd
 * (libmicrohttpd closes it). Returns 0, or a negative errno when the connection could not be served
 * at all (logged). Blocks SIGTERM and SIGINT while a request is in progress, so that a stop lets it
 * finish; between requests either signal ends the process at once.
 *
 * runner: where runs go, and where a reloaded configuration comes from. config_generation: the manager's
 * generation cfg belongs to. reloadable: when difysandbox-manager publishes a new configuration, the next
 * request on this connection asks the runner for it and uses it. slot: this connection's place in the
 * host-wide count (connslot.h, not taken), through which it may be asked to make room while it is idle
 * and unauthenticated; NULL: never asked. */
int http_serve_connection(const Config *cfg, uint64_t config_generation, bool reloadable,
                          RunnerClient *runner, ConnSlot *slot, int fd);

/* For a worker that could not set itself up (its runner unreachable, its configuration refused): reads
 * the connection's first request within the usual limits, answers it HTTP 503 with Dify's envelope
 * {"code":-503,"message":message,"data":null} and Connection: close, and returns. cfg gives the limits
 * (config_init_defaults() will do). Takes fd. */
int http_serve_refusal(const Config *cfg, const char *message, int fd);

/* When this connection's process began (CLOCK_MONOTONIC): difysandbox-worker's main(), serve's fork.
 * Each run's record carries it as PROCESS_START_USEC, so that a new connection's time splits into the
 * process's start and its setup before the first byte (docs/performance.md). */
void http_note_process_start(void);
