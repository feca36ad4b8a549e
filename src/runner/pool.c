/* pool: see pool.h. */

#include "pool.h"

#include <errno.h>
#include <stdlib.h>

void pool_init(Pool *p, const PoolLimits *limits) {
        *p = (Pool){ .limits = *limits };
}

void pool_done(Pool *p) {
        free(p->slots);
        *p = (Pool){ 0 };
}

PoolSlot *pool_add(Pool *p, pid_t pid, PoolSlotState state, Language language, int control_fd) {
        if (p->n_slots == p->n_alloc) {
                size_t n = p->n_alloc ? p->n_alloc * 2 : 16;
                PoolSlot *s = reallocarray(p->slots, n, sizeof(PoolSlot));

                if (!s)
                        return NULL;
                p->slots = s;
                p->n_alloc = n;
        }
        p->slots[p->n_slots] = (PoolSlot){
                .pid = pid,
                .state = state,
                .language = language,
                .control_fd = control_fd,
        };
        return &p->slots[p->n_slots++];
}

PoolSlot *pool_find(Pool *p, pid_t pid) {
        for (size_t i = 0; i < p->n_slots; i++)
                if (p->slots[i].pid == pid)
                        return &p->slots[i];
        return NULL;
}

void pool_remove(Pool *p, pid_t pid) {
        for (size_t i = 0; i < p->n_slots; i++)
                if (p->slots[i].pid == pid) {
                        p->slots[i] = p->slots[--p->n_slots];
                        return;
                }
}

unsigned pool_count(const Pool *p, PoolSlotState state, Language language) {
        unsigned n = 0;

        for (size_t i = 0; i < p->n_slots; i++)
                if (p->slots[i].state == state && p->slots[i].language == language)
                        n++;
        return n;
}

unsigned pool_count_handlers(const Pool *p) {
        unsigned n = 0;

        for (size_t i = 0; i < p->n_slots; i++)
                if (p->slots[i].state == POOL_SLOT_HANDLING)
                        n++;
        return n;
}

Language pool_next_to_prepare(const Pool *p) {
        unsigned preparing = 0;

        for (Language l = 0; l < _LANGUAGE_MAX; l++)
                preparing += pool_count(p, POOL_SLOT_PREPARING, l);
        if (preparing > 0 || pool_count_handlers(p) >= p->limits.cpus)
                return _LANGUAGE_INVALID;
        /* The emptiest language first, relative to its size, so that one language's traffic does not
         * starve the other's refill. */
        Language best = _LANGUAGE_INVALID;
        unsigned best_have = 0, best_size = 1;
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                unsigned have = pool_count(p, POOL_SLOT_IDLE, l), size = p->limits.size[l];

                if (have >= size)
                        continue;
                if (best < 0 || (uint64_t) have * best_size < (uint64_t) best_have * size) {
                        best = l;
                        best_have = have;
                        best_size = size;
                }
        }
        return best;
}

bool pool_may_handle(const Pool *p) {
        return pool_count_handlers(p) < p->limits.handlers_max;
}

PoolSlot *pool_take_idle(Pool *p, Language language, bool want_preloaded, uint64_t config_generation,
                         uint64_t packages_generation, pid_t *ret_stale, size_t n_stale,
                         size_t *ret_n_stale) {
        PoolSlot *found = NULL;
        size_t stale = 0;

        for (size_t i = 0; i < p->n_slots; i++) {
                PoolSlot *s = &p->slots[i];

                if (s->state != POOL_SLOT_IDLE || s->language != language)
                        continue;
                if (s->config_generation != config_generation ||
                    s->packages_generation != packages_generation) {
                        if (stale < n_stale)
                                ret_stale[stale++] = s->pid;
                        continue;
                }
                /* The wanted kind first: two code nodes in a row that import pandas both find it
                 * imported while the pool holds two preloaded slots, and `print(1)` between them leaves
                 * those for them. */
                if (!found || (found->light == want_preloaded && s->light != want_preloaded))
                        found = s;
        }
        if (found)
                found->state = POOL_SLOT_HANDLING;
        *ret_n_stale = stale;
        return found;
}
