#pragma once
/* enter-protocol: the fds through which the sandbox hands a run to the enter library (enter.c). The
 * child places them before execve(); the enter library, running as a constructor before the
 * interpreter's main(), consumes them:
 *   ENTER_FD_FILTER  a pipe holding an EnterConfig (what the run's sizes are), then the final seccomp stage
 *                    as raw struct sock_filter instructions;
 *   ENTER_FD_CODE    the code pipe, moved to CODE_FD only after the final stage is installed, so that
 *                    the bootstrap cannot read code unless the final stage is active (fail closed);
 *   ENTER_FD_ACK     a SOCK_SEQPACKET socket: one EnterAck sent once the final stage is active, carrying
 *                    the final stage's seccomp listener (SCM_RIGHTS), then closed. The parent treats a
 *                    run without it as a sandbox failure; the listener is how the run's supervisor hears
 *                    of, names and answers every call the filters refuse. Its time tells how long the
 *                    interpreter's start took (bench/).
 * One more is not the enter library's but the bootstrap's, placed by the child all the same:
 *   ENTER_FD_READY   the write end of a pipe that the interpreter's bootstrap closes once it has imported
 *                    its preloads, just before it reads its code: EOF on the read end tells the warm
 *                    pool that the run waits for its code (slot.c), not that it merely started. */

#include <stdint.h>

#define CODE_FD 3
#define ENTER_FD_FILTER 4
#define ENTER_FD_CODE 5
#define ENTER_FD_ACK 6
#define ENTER_FD_READY 7
#define ENTER_FD_FIRST_FREE 8
#define ENTER_ACK 'K'

#define ENTER_CONFIG_MAGIC 0x31455344U /* "DSE1" */

typedef struct EnterConfig {
        uint32_t magic; /* ENTER_CONFIG_MAGIC */
        uint32_t reserved;
        uint64_t memory_max; /* bytes: what sysconf(_SC_PHYS_PAGES) and sysinfo() report (enter-sizes.c) */
        uint64_t tmp_size;   /* bytes: the size of the run's /tmp, what statvfs("/tmp") reports */
} EnterConfig;

typedef struct EnterAck {
        char tag; /* ENTER_ACK */
        char reserved[7];
        uint64_t usec; /* CLOCK_MONOTONIC when the final stage became active */
} EnterAck;
