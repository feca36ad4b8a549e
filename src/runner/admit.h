#pragma once
/* admit: owns admission (DESIGN §3 step 1): at most max_requests run requests in flight and max_workers
 * runs at once, shared by every worker process of the host. Nobody else touches
 * <state_dir>/admission/. The state is nothing but flock()ed files, so a worker killed at any instant
 * (SIGKILL included) leaks nothing: the kernel drops its locks with its fds.
 *
 *   requests/0 .. requests/<max_requests-1>  a request is in flight while it holds one (LOCK_EX|LOCK_NB;
 *                                            none free: refused at once, HTTP 503)
 *   queue                                    the head of the wait queue holds it; the others block on it
 *   workers/0 .. workers/<max_workers-1>     a run is running while it holds one; only the queue head
 *                                            takes one, polling them every few milliseconds
 *
 * Order: a request always passes the queue, even when a worker slot is free, so a newcomer never
 * overtakes a waiter. Since Linux 4.20 blocked flock() requests form a chain (a new waiter blocks behind
 * the last waiter it conflicts with, and an unlock wakes only the first), so waiters get the queue lock
 * in arrival order. Two cases break the order: a newcomer that calls flock() in the instant between an
 * unlock and the woken waiter's retry takes the free lock first, and a waiter that gives up at its
 * deadline leaves the chain (those behind it keep their order). Close to FIFO, not a guarantee.
 *
 * A lock belongs to the open file description, so a process forked while a ticket is held holds its
 * slots too, until it exits or execs (the fds are O_CLOEXEC): fork only children that exec or die with
 * the holder, as the sandbox's do. */

#include <stdint.h>

typedef struct Config Config;
typedef struct Admit Admit;
typedef struct AdmitTicket AdmitTicket;

/* Creates <state_dir>/admission/ and its subdirectories if needed and opens them. */
int admit_open(const Config *cfg, Admit **ret);
Admit *admit_free(Admit *admit); /* NULL-safe, returns NULL */

/* How long an admitted request may wait for a worker slot: queue_timeout (default 50 s, so that with
 * worker_timeout it stays below Dify's 60 s read timeout and Dify gets a 503 it retries). */
uint64_t admit_wait_usec(const Config *cfg);

/* Takes a request slot, then waits in the queue for a worker slot, at most wait_usec. Returns 0 with
 * *ret set; -EBUSY when max_requests requests are in flight (nothing was waited for); -ETIMEDOUT when
 * no worker slot came free in time; another -errno when the state directory is unusable. */
int admit_take(Admit *admit, uint64_t wait_usec, AdmitTicket **ret);
AdmitTicket *admit_release(AdmitTicket *ticket); /* frees both slots; NULL-safe, returns NULL */

/* For logs: which slots a ticket holds. */
unsigned admit_ticket_request_slot(const AdmitTicket *ticket);
unsigned admit_ticket_worker_slot(const AdmitTicket *ticket);
uint64_t admit_ticket_waited_usec(const AdmitTicket *ticket);
