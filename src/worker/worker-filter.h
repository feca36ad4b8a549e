#pragma once
/* worker-filter: the worker's own system call filter, loaded after its setup (libraries, the
 * configuration, the line to the runner) and before it reads a byte of its connection. It replaces the
 * SystemCallFilter= family of difysandbox@.service, which systemd compiles anew for every instance, at a
 * cost of 4-5 ms of each new connection (docs/performance.md), and it applies the same under
 * `difysandbox serve`, whose workers systemd does not start.
 *
 * What it allows is what the worker does once it serves: reading and writing its sockets, polling,
 * memory without new executable mappings, time, memfds for the runner, AF_UNIX sockets (the runner,
 * journald, the system bus) and read-only opens. Writes, fcntl, dup and file mappings only of
 * fds below CONNSLOT_FD, where the connection slots file is kept (connslot.h), so it can neither grow
 * that file in /run nor write it; fcntl only with the commands a worker makes, none of them a lock.
 * Everything else fails with EPERM, as systemd's SystemCallErrorNumber=EPERM did; a system call of another
 * architecture kills the process. Among what it denies: execve, fork and clone (a worker never starts a
 * process), sockets of any other family (RestrictAddressFamilies=), namespaces (RestrictNamespaces=),
 * writable executable memory (MemoryDenyWriteExecute=), personality (LockPersonality=), scheduling policies
 * (RestrictRealtime=), chmod (RestrictSUIDSGID=), ptrace, process_vm_readv, pidfd_getfd, prctl, mount, kill
 * of any process but itself. */

#include <stdint.h>

#include "common/seccomp-program.h"

/* The file size limit of a worker (RLIMIT_FSIZE), a backstop to the filter: it writes no file but its
 * memfds, the code it hands the runner (at most code_max) and journald's for a long record; so the slots
 * file could not grow past this even if the filter let a write through. Set to code_max + 1 MiB before
 * the filter (which then refuses prlimit64() that sets anything). Not set when fd 1 or 2 is a regular file
 * (serve's output sent to a file, which the worker appends its log lines to): that file may be larger
 * already. LimitFSIZE= of difysandbox@.service is the same backstop for code_max's maximum. Returns 1
 * when set, 0 when not, or a negative errno. */
int worker_file_size_limit(uint64_t code_max);

/* Compiles the filter, once: `difysandbox serve` does it before it forks its first worker, and each
 * worker only loads it (compiling took 0.2 ms of every connection). The rule for signals to itself holds
 * a placeholder for the PID. Returns 0 with *ret set, or a negative errno (also when libseccomp compiled
 * the rules in a way the placeholder cannot be found in: nothing would be patched). */
int worker_filter_compile(SeccompProgram **ret);

/* Makes the calling process non-dumpable (no other worker of the same user can read its memory through
 * /proc or ptrace, nor its environment), sets no_new_privs and loads p on it, with the caller's PID as
 * the only one it may signal (it must have no other threads, must not fork, and must not change its
 * credentials or exec afterwards: both would make it dumpable again).
 * Returns 0, or a negative errno: the caller must not serve then. */
int worker_filter_load(const SeccompProgram *p);

/* worker_filter_compile() and worker_filter_load(), for a worker that starts alone (difysandbox-worker,
 * one execve() per connection under systemd). */
int worker_filter_apply(void);
