#pragma once
/* serve: owns `difysandbox serve --listen ADDR`, the stand-in for difysandbox.socket (Accept=yes) where
 * systemd is not PID 1 (DESIGN §2): it listens, forks one worker process per accepted connection that
 * runs the same http_serve_connection() as difysandbox-worker, reaps them, and on SIGTERM or SIGINT
 * stops accepting, signals its own workers and waits for them. */

typedef struct Config Config;

/* ADDR is host:port, [IPv6]:port or :port (every address); host may be a name. Returns 0 after a clean
 * stop, a negative errno when it could not listen (logged). */
int serve_main(Config *cfg, const char *listen_addr);
