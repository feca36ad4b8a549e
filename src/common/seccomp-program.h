#pragma once
/* seccomp-program: a compiled seccomp filter, exported from libseccomp, and its installation. Shared by
 * the sandbox's filters for runs (src/sandbox/seccomp.c, which compiles the policy tables) and the
 * worker's own (src/worker/worker-filter.c). */

#include <linux/filter.h>

#include <seccomp.h>

#include "common/cleanup.h"

/* A compiled filter: the sock_fprog the kernel takes, owning its instructions. */
typedef struct SeccompProgram {
        struct sock_fprog prog;
} SeccompProgram;

/* ctx compiled, as a program of its own (libseccomp 2.5 exports BPF only to an fd: a memfd keeps it in
 * memory), its system call numbers laid out as a binary search (SCMP_FLTATR_CTL_OPTIMIZE 2). Returns 0 with
 * *ret set, -E2BIG for an empty or oversized program, or another negative errno. */
int seccomp_program_export(scmp_filter_ctx ctx, SeccompProgram **ret);

SeccompProgram *seccomp_program_free(SeccompProgram *p);
DEFINE_POINTER_CLEANUP(SeccompProgram *, seccomp_program_free);
DEFINE_POINTER_CLEANUP(scmp_filter_ctx, seccomp_release);

/* Installs p on the calling thread (no_new_privs must be set). No allocation: safe after clone(). */
int seccomp_install(const SeccompProgram *p);
