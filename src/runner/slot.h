#pragma once
/* slot: owns the life of one process of the warm pool (DESIGN §2, pool.h). Forked by runner.c, it
 * prepares one run (sandbox_prepare(): UID, scope or cgroup, namespaces, root, credentials, both seccomp
 * stages, the interpreter started with its preload imports and blocked on fd 3), tells the runner which
 * dependency generation the run holds, and waits. Then either the runner hands it one request (the
 * worker's connection and the code), which it serves with handler_run() and exits, or the runner closes
 * the control socket (the configuration or the generation changed, or it stops), and it kills its run
 * and exits. If the run dies while it waits, or grows too old (a random age of 5 to 10 minutes: what a
 * run can read of its age must not tell when the pool last refilled), the slot says so (SLOT_GONE) and
 * the runner retires it, unless it has just handed it a request, which the slot then serves with a run
 * made afresh. */

#include <stdbool.h>
#include <stdint.h>

#include "runtime/runtime.h"

typedef struct HandlerContext HandlerContext;

#define SLOT_MESSAGE_MAGIC UINT32_C(0x31544c53) /* "SLT1" */

/* packages_generation of the message a slot sends when its run died while it waited. */
#define SLOT_GONE UINT64_MAX

typedef struct __attribute__((packed)) SlotReady {
        uint32_t magic;
        uint32_t reserved;
        uint64_t packages_generation;
} SlotReady;

/* Never returns. */
/* preload: the interpreter imports pool_preload.<language> before it waits (a light slot does not). */
void slot_main(const HandlerContext *ctx, Language language, bool network, bool preload, int control_fd)
        __attribute__((noreturn));
