#pragma once
/* seccomp: compiles the policy tables (seccomp-policy.c and the language rows of src/runtime/) into BPF
 * with libseccomp; common/seccomp-program.h holds the program and installs it. Two stages (DESIGN §3.7):
 *   SECCOMP_STAGE_EXEC   loaded by the child right before execve(); allows the interpreter's start-up;
 *   SECCOMP_STAGE_FINAL  loaded by the enter library before user code; no exec, no new filters.
 * Compiling allocates and so happens in the parent; installing is one syscall and safe in the child. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/seccomp-program.h"

typedef struct SyscallRule SyscallRule;

typedef enum SeccompStage {
        SECCOMP_STAGE_EXEC,
        SECCOMP_STAGE_FINAL,
        _SECCOMP_STAGE_MAX,
} SeccompStage;

/* rows: the language's rows (n_rows of them, sorted by name), which its caller takes from the language's
 * descriptor: sandbox/ knows no language. extra: NULL-terminated syscall names that the operator allows on
 * top (allowed_syscalls), or NULL. Returns -EINVAL for an unknown name and -EPERM for a name of the
 * never-allow list or one whose row limits its arguments or fails it with an errno (a plain allow would undo
 * that row). */
int seccomp_compile(const SyscallRule *rows, size_t n_rows, bool network, SeccompStage stage,
                    char *const *extra, SeccompProgram **ret);
/* The same for arch, an SCMP_ARCH_* token: the tests compile the tables for every architecture we ship
 * (arm64 on an x86-64 build host). A program for a foreign arch is for inspection, not for installing. */
int seccomp_compile_arch(const SyscallRule *rows, size_t n_rows, bool network, SeccompStage stage,
                         char *const *extra, uint32_t arch, SeccompProgram **ret);
