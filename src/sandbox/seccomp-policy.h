#pragma once
/* seccomp-policy: the vocabulary of the syscall policy tables and the rows every interpreter on glibc
 * needs. Language rows live with their language in src/runtime/. A row names a syscall, what happens to
 * it, and why a run needs it; seccomp.c compiles the tables, tests/unit/test-seccomp-policy.c checks
 * them (reasons present, sorted, unique, nothing from the never-allow list reachable by user code). */

#include <stddef.h>

typedef enum RuleAction {
        RULE_ALLOW,       /* both stages */
        RULE_STARTUP,     /* stage 1 only: ld.so, glibc start-up and the enter library before user code */
        RULE_THREAD_ONLY, /* clone: only with CLONE_VM|CLONE_SIGHAND|CLONE_THREAD and no namespace flag */
        RULE_ENOSYS,      /* fails with ENOSYS so libc falls back to a call we can check */
        RULE_EPERM,       /* fails with EPERM so the library reports a clean error instead of dying */
        RULE_NETWORK,     /* allowed only when the run has network; refused (named, ENOSYS) otherwise */
        RULE_SOCKET,      /* socket(): AF_INET/AF_INET6 with network, else EACCES (glibc then skips nscd) */
        RULE_SOCKET_NETLINK, /* socket(): as RULE_SOCKET, plus AF_NETLINK/NETLINK_ROUTE (the run's own netns)
                              */
        RULE_IOCTL,          /* ioctl(): only the terminal and socket queries of ioctl_allowed[] */
        RULE_PRCTL,          /* prctl(): only the options of prctl_rules[] (thread names) */
        _RULE_ACTION_MAX,
} RuleAction;

/* Where the syscall exists. A row leaves it out (RULE_ARCH_ALL): the name must then resolve on every
 * architecture we build for, or compiling fails. Legacy calls that the generic syscall ABI (arm64) has
 * only as their *at / p* successor are marked RULE_ARCH_X86_64, and the successor has its own row. */
typedef enum RuleArch {
        RULE_ARCH_ALL,
        RULE_ARCH_X86_64,
        _RULE_ARCH_MAX,
} RuleArch;

typedef struct SyscallRule {
        const char *name;
        RuleAction action;
        const char *reason;
        RuleArch arch; /* optional fourth field of a row; see RuleArch */
} SyscallRule;

typedef struct IoctlRule {
        unsigned long request;
        const char *name;
        const char *reason;
} IoctlRule;

typedef struct PrctlRule {
        int option;
        const char *name;
        const char *reason;
} PrctlRule;

/* The tables are constant data behind accessors; each returns its row count in *ret_n. */
const SyscallRule *seccomp_common_rules(size_t *ret_n);
const IoctlRule *seccomp_ioctl_rules(size_t *ret_n);
const PrctlRule *seccomp_prctl_rules(size_t *ret_n);

/* A system call no user code may ever reach, whatever the language, network or configuration (DESIGN
 * §3.7), and why: the reason is what config-file.c answers when allowed_syscalls names it. */
typedef struct NeverAllowRule {
        const char *name;
        const char *reason;
        int answer; /* 0: the run is killed (only an escape or an attack makes the call); else the errno
                     * the call fails with (creating a process: EPERM, so the user's code sees it) */
} NeverAllowRule;

/* The never-allow table, sorted by name. */
const NeverAllowRule *seccomp_never_allow(size_t *ret_n);

/* The reason of name's row, or NULL when name is not in the never-allow table. */
const char *seccomp_never_allow_reason(const char *name);

/* How the supervisor answers a call that no row allows (DESIGN §3.7): the filters hand every such call to
 * the run's supervisor (SECCOMP_RET_USER_NOTIF), which names it and answers it this way. */
typedef struct RefusalAnswer {
        int error;          /* the errno the call fails with; 0: the run is killed */
        const char *reason; /* why, for the answer's error line: the never-allow row's reason, or NULL */
} RefusalAnswer;

RefusalAnswer seccomp_refusal_answer(const char *name);
