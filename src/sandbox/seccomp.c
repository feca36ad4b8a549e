/* seccomp: see seccomp.h. */

#include "seccomp.h"

#include <errno.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

#include "common/cleanup.h"
#include "enter/enter-protocol.h"
#include "seccomp-policy.h"

/* Thread creation as glibc does it: CLONE_VM|CLONE_SIGHAND|CLONE_THREAD set, no namespace flag
 * (reference/syscalls.md §4: validated rule). */
#define CLONE_THREAD_MASK 0x7e030900ULL
#define CLONE_THREAD_BITS 0x00010900ULL

/* With network, the only sockets of the Internet families: TCP streams and UDP datagrams (protocol 0 or
 * the explicit one), SOCK_NONBLOCK and SOCK_CLOEXEC allowed. Anything else of AF_INET/AF_INET6 (MPTCP,
 * UDP-Lite, SCTP, raw and ICMP sockets) is left to the default action (the supervisor: EAFNOSUPPORT). The
 * type is an int: bits above 32 are ignored by the kernel, so they are masked here too. */
static int add_inet_socket_rules(scmp_filter_ctx ctx) {
        static const int families[] = { AF_INET, AF_INET6 };
        static const struct {
                int type, protocol;
        } allowed[] = {
                { SOCK_STREAM, 0 },
                { SOCK_STREAM, IPPROTO_TCP },
                { SOCK_DGRAM, 0 },
                { SOCK_DGRAM, IPPROTO_UDP },
        };
        const scmp_datum_t type_mask = UINT32_MAX & ~(scmp_datum_t) (SOCK_NONBLOCK | SOCK_CLOEXEC);
        int r;

        for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
                for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
                        r = seccomp_rule_add(
                                ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 3,
                                SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) families[f]),
                                SCMP_A1(SCMP_CMP_MASKED_EQ, type_mask, (scmp_datum_t) allowed[i].type),
                                SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t) allowed[i].protocol));
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int add_socket_rules(scmp_filter_ctx ctx, bool network, bool netlink) {
        int r;

        if (!network && !netlink)
                /* Every family fails: glibc then reads /etc/passwd instead of asking nscd, and code that
                 * wants the network gets a clean PermissionError, never a kill at start-up. */
                return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 0);
        if (!network) {
                /* As above, but for NETLINK_ROUTE: the run's network namespace is its own and holds only
                 * loopback, and os.networkInterfaces() reads it through netlink (changing it needs
                 * CAP_NET_ADMIN, which a run has not). */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_NE, AF_NETLINK));
                if (r < 0)
                        return r;
                return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
                                        SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
                                        SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE));
        }

        r = add_inet_socket_rules(ctx);
        if (r < 0)
                return r;
        /* AF_UNIX reaches nothing useful and would let code talk to abstract sockets of the host's network
         * namespace; refusing it makes glibc skip nscd. Other families: default (the supervisor). */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
                             SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
        if (r < 0)
                return r;
        if (netlink)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
                                     SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE));
        return r;
}

static int add_prctl_rules(scmp_filter_ctx ctx) {
        const PrctlRule *rules;
        size_t n;
        int r;

        rules = seccomp_prctl_rules(&n);
        for (size_t i = 0; i < n; i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) rules[i].option));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_ioctl_rules(scmp_filter_ctx ctx) {
        const IoctlRule *rules;
        size_t n;
        int r;

        rules = seccomp_ioctl_rules(&n);
        for (size_t i = 0; i < n; i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) rules[i].request));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* rule->name on the target architecture: 1 when the filter gets the row, 0 when the row is marked for
 * another architecture, -ENOSYS when a row meant for every architecture does not exist on this one (the
 * table is wrong: refusing beats a silently missing row). */
static int rule_applies(const SyscallRule *rule, uint32_t arch) {
        int nr;

        if (rule->arch == RULE_ARCH_X86_64 && arch != SCMP_ARCH_X86_64)
                return 0;
        nr = seccomp_syscall_resolve_name_arch(arch, rule->name);
        if (nr == __NR_SCMP_ERROR)
                return -EINVAL;
        return nr < 0 ? -ENOSYS : 1;
}

static int add_rule(scmp_filter_ctx ctx, const SyscallRule *rule, bool network, SeccompStage stage,
                    uint32_t arch) {
        int nr, r;

        r = rule_applies(rule, arch);
        if (r <= 0)
                return r;
        /* libseccomp takes the native number and translates it by name for a foreign target. */
        nr = seccomp_syscall_resolve_name(rule->name);

        switch (rule->action) {
        case RULE_ALLOW:
                return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        case RULE_STARTUP:
                return stage == SECCOMP_STAGE_EXEC ? seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) : 0;
        case RULE_THREAD_ONLY:
                return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
                                        SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD_MASK, CLONE_THREAD_BITS));
        case RULE_ENOSYS:
                return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
        case RULE_EPERM:
                return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        case RULE_NETWORK:
                return network ? seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) : 0;
        case RULE_SOCKET:
                return add_socket_rules(ctx, network, false);
        case RULE_SOCKET_NETLINK:
                return add_socket_rules(ctx, network, true);
        case RULE_IOCTL:
                return add_ioctl_rules(ctx);
        case RULE_PRCTL:
                return add_prctl_rules(ctx);
        case _RULE_ACTION_MAX:
        default:
                return -EINVAL;
        }
}

/* The action of name in the tables, or -1 when no row names it. */
static int table_action(const SyscallRule *rows, size_t n_rows, const char *name) {
        const SyscallRule *common;
        size_t n;

        common = seccomp_common_rules(&n);
        for (size_t i = 0; i < n; i++)
                if (strcmp(common[i].name, name) == 0)
                        return (int) common[i].action;
        for (size_t i = 0; i < n_rows; i++)
                if (strcmp(rows[i].name, name) == 0)
                        return (int) rows[i].action;
        return -1;
}

static bool never_allowed(const char *name) {
        return seccomp_never_allow_reason(name) != NULL;
}

int seccomp_compile(const SyscallRule *rows, size_t n_rows, bool network, SeccompStage stage,
                    char *const *extra, SeccompProgram **ret) {
        return seccomp_compile_arch(rows, n_rows, network, stage, extra, seccomp_arch_native(), ret);
}

int seccomp_compile_arch(const SyscallRule *rows, size_t n_rows, bool network, SeccompStage stage,
                         char *const *extra, uint32_t arch, SeccompProgram **ret) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        const SyscallRule *common;
        size_t n_common;
        int r;

        /* A call no row allows goes to the run's supervisor (SECCOMP_RET_USER_NOTIF), which names it and
         * answers with an errno, or kills the run for a never-allow call (refusals.c). The call never
         * executes either way. Until the enter library hands the final stage's listener over, and in the
         * exec stage, which has no listener, the kernel answers ENOSYS itself: the newest filter returning
         * the action gets the notification, and the final stage refuses everything the exec stage does. */
        ctx = seccomp_init(SCMP_ACT_NOTIFY);
        if (!ctx)
                return -ENOMEM;
        if (arch != seccomp_arch_native()) {
                r = seccomp_arch_add(ctx, arch);
                if (r < 0)
                        return r;
                r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
                if (r < 0)
                        return r;
        }
        /* x32 and i386 (int 0x80) calls carry another audit arch or the x32 bit: kill them too. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;
        /* We set no_new_privs ourselves, in the credentials step; libseccomp only compiles here. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r < 0)
                return r;

        common = seccomp_common_rules(&n_common);
        for (size_t i = 0; i < n_common; i++) {
                r = add_rule(ctx, &common[i], network, stage, arch);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_rows; i++) {
                r = add_rule(ctx, &rows[i], network, stage, arch);
                if (r < 0)
                        return r;
        }
        /* The enter library hands the final stage's listener to the supervisor on its ack socket (and on
         * nothing else): both stages must allow it, or the exec stage's refusal would win. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1,
                             SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) ENTER_FD_ACK));
        if (r < 0 && r != -EEXIST)
                return r;

        for (char *const *name = extra; name && *name; name++) {
                int nr, action;

                if (never_allowed(*name))
                        return -EPERM;
                /* A plain allow would replace an argument rule (clone's thread flags, the socket
                 * families, the ioctl list) or an errno rule: refuse rather than widen or be ignored. */
                action = table_action(rows, n_rows, *name);
                if (action >= 0 && action != RULE_ALLOW && action != RULE_NETWORK && action != RULE_STARTUP)
                        return -EPERM;
                if (seccomp_syscall_resolve_name_arch(arch, *name) == __NR_SCMP_ERROR)
                        return -EINVAL;
                nr = seccomp_syscall_resolve_name(*name);
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0 && r != -EEXIST)
                        return r;
        }

        return seccomp_program_export(ctx, ret);
}
