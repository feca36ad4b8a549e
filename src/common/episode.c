/* episode: see episode.h. */

#include "episode.h"

bool episode_event(Episode *e, uint64_t now_usec) {
        bool begins = !e->active;

        e->active = true;
        e->events++;
        e->last_usec = now_usec;
        return begins;
}

bool episode_quiet(const Episode *e, uint64_t now_usec, uint64_t quiet_usec) {
        return e->active && now_usec >= e->last_usec && now_usec - e->last_usec >= quiet_usec;
}

uint64_t episode_end(Episode *e) {
        uint64_t n = e->active ? e->events : 0;

        *e = (Episode){ 0 };
        return n;
}
