#pragma once
/* worker-filter: the worker's own system call filter, loaded after its setup (libraries, the
 * configuration, the line to the runner) and before it reads a byte of its connection. It replaces the
 * SystemCallFilter= family of difysandbox@.service, which systemd compiles anew for every instance, at a
 * cost of 4-5 ms of each new connection (docs/performance.md), and it applies the same under
 * `difysandbox serve`, whose workers systemd does not start.
 *
 * What it allows is what the worker does once it serves: reading and writing its sockets, polling,
 * memory without new executable mappings, time, memfds for the runner, AF_UNIX sockets (the runner,
 * journald, the system bus) and read-only opens. Everything else fails with EPERM, as systemd's
 * SystemCallErrorNumber=EPERM did; a system call of another architecture kills the process. Among what
 * it denies: execve, fork and clone (a worker never starts a process), sockets of any other family
 * (RestrictAddressFamilies=), namespaces (RestrictNamespaces=), writable executable memory
 * (MemoryDenyWriteExecute=), personality (LockPersonality=), scheduling policies (RestrictRealtime=),
 * chmod (RestrictSUIDSGID=), ptrace, mount, kill of any process but itself. */

/* Sets no_new_privs and loads the filter on the calling process (which must have no other threads).
 * Returns 0, or a negative errno: the caller must not serve then. */
int worker_filter_apply(void);
