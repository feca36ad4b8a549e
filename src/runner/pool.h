#pragma once
/* pool: owns the runner's bookkeeping of its child processes (DESIGN §2): the warm slots (a prepared run
 * per process: preparing, then idle until a request takes it) and the handlers (a process serving one
 * request). Pure logic, no I/O: runner.c forks and reaps, this file decides and counts, so the bounds
 * can be tested alone.
 *
 * The bounds, whatever clients do:
 *   - idle + preparing slots of a language never exceed its configured pool size, and only one slot is
 *     prepared at a time, and only while fewer handlers run than the host has CPUs: preparing (an
 *     interpreter start, the preload imports) never competes with the runs themselves (runner.c decides
 *     what kind of slot: light, without the preloads, while runs are coming);
 *   - handlers never exceed handlers_max (max_requests: a request past it is refused at once, as
 *     admission would refuse it);
 *   - a slot is taken once, then it serves its request and exits: a prepared run is never reused. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/runtime.h"

typedef enum PoolSlotState {
        POOL_SLOT_PREPARING, /* forked, making its run */
        POOL_SLOT_IDLE,      /* its run waits for code; it said which generations it holds */
        POOL_SLOT_HANDLING,  /* a handler: a slot that was taken, or a process forked for one request */
        POOL_SLOT_RETIRED,   /* told to go (stale configuration or generation); counts for nothing */
} PoolSlotState;

typedef struct PoolSlot {
        pid_t pid;
        PoolSlotState state;
        Language language;
        int control_fd;               /* the runner's end of the socketpair to the process; -EBADF none */
        uint64_t config_generation;   /* of the configuration it was made with */
        uint64_t packages_generation; /* the dependency generation its run holds (idle slots) */
        bool light;                   /* prepared without the preload imports (runner.c: while runs come) */
        uint64_t tree_generation;     /* the runtime tree's generation when it was forked (runner.c) */
        void *userdata;               /* the runner's: the connection a handler serves */
        void *child_source, *control_source; /* the runner's event sources */
} PoolSlot;

typedef struct PoolLimits {
        unsigned size[_LANGUAGE_MAX]; /* idle + preparing slots of each language, at most */
        unsigned handlers_max;        /* handlers at once */
        unsigned cpus;                /* no slot is prepared while this many handlers run */
} PoolLimits;

typedef struct Pool {
        PoolLimits limits;
        PoolSlot *slots;
        size_t n_slots, n_alloc;
} Pool;

void pool_init(Pool *p, const PoolLimits *limits);
void pool_done(Pool *p); /* frees the table; the processes are the caller's */

/* Records a process that was just forked. Returns the slot (valid until the next add or remove). */
PoolSlot *pool_add(Pool *p, pid_t pid, PoolSlotState state, Language language, int control_fd);
PoolSlot *pool_find(Pool *p, pid_t pid);
void pool_remove(Pool *p, pid_t pid);

unsigned pool_count(const Pool *p, PoolSlotState state, Language language);
unsigned pool_count_handlers(const Pool *p);

/* The language whose slot should be prepared now, or _LANGUAGE_INVALID when none should. */
Language pool_next_to_prepare(const Pool *p);
/* Whether one more handler may start. */
bool pool_may_handle(const Pool *p);
/* An idle slot of language made with config_generation and holding packages_generation, or NULL: of the
 * kind the code wants first (want_preloaded: one with the preload imports, for code that names a preload
 * module; else a light one, so that a preloaded run is not spent on code that never uses its imports),
 * else of the other kind (a prepared run beats one made on demand). Idle slots of that language that do
 * not match the generations are returned through ret_stale (up to n_stale), so the caller retires them. */
PoolSlot *pool_take_idle(Pool *p, Language language, bool want_preloaded, uint64_t config_generation,
                         uint64_t packages_generation, pid_t *ret_stale, size_t n_stale,
                         size_t *ret_n_stale);
