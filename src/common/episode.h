#pragma once
/* episode: owns the "one warning per episode" rule (issue 24): a burst of like events (connections refused
 * or shed, accept() out of descriptors) is logged once when it begins and summed up once when it has been
 * quiet for a while, never once per event: a client that can cause an event must not be able to flood the
 * journal. Pure logic; the caller logs and gives the time. */

#include <stdbool.h>
#include <stdint.h>

typedef struct Episode {
        bool active;
        uint64_t events;    /* in the episode so far */
        uint64_t last_usec; /* CLOCK_MONOTONIC of its last event */
} Episode;

/* Counts one event at now_usec; true when it begins an episode: the caller logs its one warning. */
bool episode_event(Episode *e, uint64_t now_usec);
/* Whether an episode is going on and has had no event for quiet_usec: the caller ends it. */
bool episode_quiet(const Episode *e, uint64_t now_usec, uint64_t quiet_usec);
/* Ends the episode; returns how many events it had (0: there was none going on). */
uint64_t episode_end(Episode *e);
