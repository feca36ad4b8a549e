#pragma once
/* refusals: the run's supervisor for the calls its filters refuse (DESIGN §3.7). The final stage hands every
 * call that no row allows to the seccomp listener the enter library sends us (SECCOMP_RET_USER_NOTIF); here
 * each one is named, counted, and answered with the errno its name calls for (seccomp_refusal_answer()), or
 * the run is to be killed: a never-allow call that only an escape or an attack makes. The call never
 * executes either way, and the kernel's own record of it (audit, rate-limited and root-only) is not needed.
 * Used by output.c while the run executes and by run.c while a prepared run imports its preloads. Never
 * logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REFUSALS_MAX 16 /* distinct calls a run's record names; the total counts every refusal */

typedef struct Refusal {
        int nr;         /* the system call's number on the native architecture */
        uint32_t count; /* how often the run made it */
        int error;      /* what it was answered: a positive errno, or 0 when it killed the run */
} Refusal;

typedef struct Refusals {
        Refusal calls[REFUSALS_MAX]; /* in the order they first came */
        unsigned n;
        uint64_t total; /* every refused call, named above or not */
        int killed_nr;  /* the never-allow call that ended the run, or -1 */
} Refusals;

#define REFUSALS_NULL ((Refusals){ .killed_nr = -1 })

/* Receives one pending notification on listener and answers it. Returns 1 when the call is one that ends
 * the run (the caller kills it: it stays blocked until then), 0 when it was answered, or when its caller
 * died meanwhile, -errno when the listener failed. */
int refusals_answer(int listener, Refusals *r);

/* The call's name on this architecture, into buf; "syscall <nr>" for a number libseccomp does not know. */
const char *refusals_name(int nr, char *buf, size_t size);

/* Adds what more holds to into (a prepared run's refusals to its execution's). */
void refusals_merge(Refusals *into, const Refusals *more);

/* The lines the answer's error gets after its first (DESIGN §3.10), each ending in '\n', or "" when there
 * are none: the call that killed the run with its reason, then each refused call an operator could allow.
 * Refusals of process creation are left out: the user's code got EPERM at its own line ("Operation not
 * permitted"), and the journal and the stats still count them. */
int refusals_format(const Refusals *r, char **ret);

/* For the run's journal record (common/log.h): ret_syscall gets the call that killed the run, else the first
 * refused; ret_list every named call as "name:count" separated by spaces. Both "" when nothing was refused.
 * Never fails: what does not fit is cut. */
void refusals_describe(const Refusals *r, char *ret_syscall, size_t syscall_size, char *ret_list,
                       size_t list_size);
