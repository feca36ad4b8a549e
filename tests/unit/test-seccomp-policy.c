/* test-seccomp-policy: the policy tables of src/sandbox/seccomp-policy.c and the language rows of
 * src/runtime/python3.c and nodejs.c, read through runtime_get(). Table tests in the manner of
 * systemd's src/test/test-seccomp.c: every row has a reason, names are sorted, unique and real, and no
 * name of the never-allow list is reachable by user code. The compiled filters are tested for their
 * effect in test-seccomp.c. */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <cmocka.h>
#include <seccomp.h>

#include "common/cleanup.h"
#include "runtime/runtime.h"
#include "sandbox/seccomp-policy.h"

typedef struct Table {
        const char *label;
        const SyscallRule *rules;
        size_t n;
} Table;

/* The common table first, then one per language. */
static size_t get_tables(Table tables[static _LANGUAGE_MAX + 1]) {
        size_t n = 0;

        tables[n].label = "common";
        tables[n].rules = seccomp_common_rules(&tables[n].n);
        n++;
        for (Language l = 0; l < _LANGUAGE_MAX; l++) {
                const Runtime *rt = runtime_get(l);

                assert_non_null(rt);
                assert_non_null(rt->name);
                tables[n] = (Table){ .label = rt->name, .rules = rt->rules, .n = rt->n_rules };
                n++;
        }
        return n;
}

static bool is_blank(const char *s) {
        return !s || s[strspn(s, " \t\n")] == '\0';
}

static bool never_allowed(const char *name) {
        return seccomp_never_allow_reason(name) != NULL;
}

static void test_tables_present(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        assert_int_equal(n, 1 + _LANGUAGE_MAX);
        for (size_t t = 0; t < n; t++) {
                assert_non_null(tables[t].rules);
                if (tables[t].n == 0)
                        fail_msg("table '%s' is empty", tables[t].label);
        }
        assert_null(runtime_get(_LANGUAGE_MAX));
}

static void test_every_row_has_a_reason(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        for (size_t t = 0; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        const SyscallRule *r = &tables[t].rules[i];

                        if (is_blank(r->name))
                                fail_msg("%s row %zu has no name", tables[t].label, i);
                        if (is_blank(r->reason))
                                fail_msg("%s row '%s' has no reason", tables[t].label, r->name);
                }
}

static void test_rows_sorted_and_unique(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        for (size_t t = 0; t < n; t++)
                for (size_t i = 1; i < tables[t].n; i++) {
                        const char *prev = tables[t].rules[i - 1].name, *cur = tables[t].rules[i].name;
                        int c = strcmp(prev, cur);

                        if (c == 0)
                                fail_msg("%s: '%s' appears twice", tables[t].label, cur);
                        if (c > 0)
                                fail_msg("%s: '%s' sorts before '%s' but comes after it", tables[t].label,
                                         cur, prev);
                }
}

static void test_language_rows_not_in_common(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        /* A name in both would be compiled twice with possibly different actions. */
        for (size_t t = 1; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++)
                        for (size_t j = 0; j < tables[0].n; j++)
                                if (streq(tables[t].rules[i].name, tables[0].rules[j].name))
                                        fail_msg("'%s' is in both the common and the %s table",
                                                 tables[0].rules[j].name, tables[t].label);
}

static void test_names_resolve_on_x86_64(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        /* A typo would be skipped by the compiler as "not on this architecture" or fail every run. */
        for (size_t t = 0; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        const char *name = tables[t].rules[i].name;
                        int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);

                        if (nr < 0)
                                fail_msg("%s: '%s' is not an x86_64 system call (%d)", tables[t].label, name,
                                         nr);
                        /* and the name libseccomp gives back for that number is the row's name */
                        _cleanup_free_ char *back = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
                        assert_non_null(back);
                        assert_string_equal(back, name);
                }
}

/* Where a marked row's work goes on arm64: the successor of the generic syscall ABI, which must have a
 * row with the same action, or nothing to do there (arch_prctl: arm64 keeps TLS in a register; open: its
 * row refuses a probe of the raw call, and on arm64 the same code opens with openat, allowed as ever). */
/* clang-format off */
static const struct {
        const char *x86_only;
        const char *successor;
} successors[] = {
        { "access",     "faccessat" },
        { "alarm",      "setitimer" },
        { "arch_prctl", NULL },
        { "chmod",      "fchmodat" },
        { "chown",      "fchownat" },
        { "dup2",       "dup3" },
        { "epoll_wait", "epoll_pwait" },
        { "eventfd",    "eventfd2" },
        { "getpgrp",    "getpgid" },
        { "inotify_init", "inotify_init1" },
        { "lchown",     "fchownat" },
        { "link",       "linkat" },
        { "mkdir",      "mkdirat" },
        { "open",       NULL },
        { "pipe",       "pipe2" },
        { "poll",       "ppoll" },
        { "readlink",   "readlinkat" },
        { "rename",     "renameat" },
        { "rmdir",      "unlinkat" },
        { "select",     "pselect6" },
        { "symlink",    "symlinkat" },
        { "time",       "clock_gettime" },
        { "unlink",     "unlinkat" },
};
/* clang-format on */

static const SyscallRule *find_row(const Table *common, const Table *table, const char *name) {
        for (size_t i = 0; i < common->n; i++)
                if (streq(common->rules[i].name, name))
                        return &common->rules[i];
        for (size_t i = 0; i < table->n; i++)
                if (streq(table->rules[i].name, name))
                        return &table->rules[i];
        return NULL;
}

static void check_x86_only_row(const Table *common, const Table *table, const SyscallRule *r) {
        const SyscallRule *next;
        size_t k;

        /* The mark says "does not exist on arm64": a name arm64 has must not be dropped there. */
        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, r->name) >= 0)
                fail_msg("%s: '%s' is marked x86-64 only but exists on arm64", table->label, r->name);
        for (k = 0; k < ELEMENTSOF(successors); k++)
                if (streq(successors[k].x86_only, r->name))
                        break;
        if (k == ELEMENTSOF(successors))
                fail_msg("%s: '%s' is x86-64 only: which call does the same on arm64? (add it to "
                         "successors[])",
                         table->label, r->name);
        if (!successors[k].successor)
                return;
        next = find_row(common, table, successors[k].successor);
        if (!next || next->action != r->action || next->arch != RULE_ARCH_ALL)
                fail_msg("%s: '%s' is x86-64 only, and its arm64 successor '%s' has no row with the same "
                         "action",
                         table->label, r->name, successors[k].successor);
}

static void test_rows_resolve_on_aarch64_or_are_marked(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables), marked = 0;

        /* A row meant for both architectures that arm64 lacks would fail every arm64 run (seccomp.c refuses
         * to compile it); a row that only x86-64 has must say so, and what replaces it there. */
        for (size_t t = 0; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        const SyscallRule *r = &tables[t].rules[i];

                        if ((int) r->arch < 0 || r->arch >= _RULE_ARCH_MAX)
                                fail_msg("%s: '%s' has arch %d", tables[t].label, r->name, (int) r->arch);
                        if (r->arch == RULE_ARCH_X86_64) {
                                check_x86_only_row(&tables[0], &tables[t], r);
                                marked++;
                                continue;
                        }
                        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, r->name) < 0)
                                fail_msg("%s: '%s' is not an arm64 system call: mark the row "
                                         "RULE_ARCH_X86_64",
                                         tables[t].label, r->name);
                }
        /* and the mark is in use: without it, the loop above proves nothing about the legacy calls */
        assert_true(marked >= 10);
}

static void test_actions_valid(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables);

        /* The argument-filtering actions are written for one system call each. */
        for (size_t t = 0; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        const SyscallRule *r = &tables[t].rules[i];

                        if ((int) r->action < 0 || r->action >= _RULE_ACTION_MAX)
                                fail_msg("%s: '%s' has action %d", tables[t].label, r->name,
                                         (int) r->action);
                        if (r->action == RULE_THREAD_ONLY && !streq(r->name, "clone"))
                                fail_msg("%s: RULE_THREAD_ONLY on '%s'", tables[t].label, r->name);
                        if ((r->action == RULE_SOCKET || r->action == RULE_SOCKET_NETLINK) &&
                            !streq(r->name, "socket"))
                                fail_msg("%s: a socket rule on '%s'", tables[t].label, r->name);
                        if (r->action == RULE_IOCTL && !streq(r->name, "ioctl"))
                                fail_msg("%s: RULE_IOCTL on '%s'", tables[t].label, r->name);
                        /* and those syscalls never get a plain allow */
                        if ((streq(r->name, "clone") && r->action != RULE_THREAD_ONLY) ||
                            (streq(r->name, "ioctl") && r->action != RULE_IOCTL) ||
                            (streq(r->name, "socket") && r->action != RULE_SOCKET &&
                             r->action != RULE_SOCKET_NETLINK) ||
                            (streq(r->name, "clone3") && r->action != RULE_ENOSYS))
                                fail_msg("%s: '%s' is not argument-filtered", tables[t].label, r->name);
                }
}

static void test_never_allow_only_execve_at_startup(void **state) {
        Table tables[_LANGUAGE_MAX + 1];
        size_t n = get_tables(tables), found = 0;

        /* The one exception that lets a call through: the exec stage must let the child exec the
         * interpreter. RULE_STARTUP rows are not compiled into the final stage, which is what user code runs
         * under. A row that makes the filter itself fail the call (a runtime that only probes it, as libuv
         * does io_uring_setup) lets nothing through, so it is no exception. */
        for (size_t t = 0; t < n; t++)
                for (size_t i = 0; i < tables[t].n; i++) {
                        const SyscallRule *r = &tables[t].rules[i];

                        if (!never_allowed(r->name))
                                continue;
                        if (r->action == RULE_ENOSYS || r->action == RULE_EPERM)
                                continue;
                        if (t != 0 || !streq(r->name, "execve"))
                                fail_msg("%s: never-allow name '%s' has a row", tables[t].label, r->name);
                        if (r->action != RULE_STARTUP)
                                fail_msg("common: 'execve' has action %d, not RULE_STARTUP",
                                         (int) r->action);
                        found++;
                }
        assert_int_equal(found, 1);
}

static void test_never_allow_list(void **state) {
        static const char *const required[] = {
                /* DESIGN §3.7: exec, fork, ptrace, mount, namespaces, keyrings, bpf, perf, io_uring,
                 * userfaultfd */
                "execve",
                "execveat",
                "fork",
                "vfork",
                "ptrace",
                "mount",
                "umount2",
                "pivot_root",
                "unshare",
                "setns",
                "add_key",
                "keyctl",
                "request_key",
                "bpf",
                "perf_event_open",
                "io_uring_setup",
                "io_uring_enter",
                "io_uring_register",
                "userfaultfd",
        };
        const NeverAllowRule *never;
        size_t n;

        never = seccomp_never_allow(&n);
        assert_non_null(never);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                int nr;

                assert_false(is_blank(never[i].name));
                if (is_blank(never[i].reason))
                        fail_msg("never-allow name '%s' has no reason", never[i].name);
                /* A misspelt name would never match an allowed_syscalls entry it is meant to refuse. */
                nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, never[i].name);
                if (nr < 0)
                        fail_msg("never-allow name '%s' is not an x86_64 system call", never[i].name);
                /* Sorted, so unique: one row per name, found by reading. */
                if (i > 0 && strcmp(never[i - 1].name, never[i].name) >= 0)
                        fail_msg("never-allow names '%s' and '%s' are not sorted and unique",
                                 never[i - 1].name, never[i].name);
                assert_string_equal(seccomp_never_allow_reason(never[i].name), never[i].reason);
        }
        assert_null(seccomp_never_allow_reason("read"));
        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!never_allowed(required[i]))
                        fail_msg("'%s' is missing from the never-allow list", required[i]);
}

static void test_ioctl_table(void **state) {
        const IoctlRule *rules;
        size_t n;

        rules = seccomp_ioctl_rules(&n);
        assert_non_null(rules);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                if (is_blank(rules[i].name))
                        fail_msg("ioctl row %zu (0x%lx) has no name", i, rules[i].request);
                if (is_blank(rules[i].reason))
                        fail_msg("ioctl '%s' has no reason", rules[i].name);
                /* TIOCSTI pushes input into the terminal, TIOCLINUX reads the console's selection */
                if (rules[i].request == TIOCSTI || streq(rules[i].name, "TIOCSTI"))
                        fail_msg("TIOCSTI is in the ioctl table");
                if (rules[i].request == TIOCLINUX || streq(rules[i].name, "TIOCLINUX"))
                        fail_msg("TIOCLINUX is in the ioctl table");
                for (size_t j = 0; j < i; j++) {
                        if (rules[i].request == rules[j].request)
                                fail_msg("ioctl 0x%lx appears twice ('%s', '%s')", rules[i].request,
                                         rules[j].name, rules[i].name);
                        if (streq(rules[i].name, rules[j].name))
                                fail_msg("ioctl '%s' appears twice", rules[i].name);
                }
        }
}

static void test_ioctl_names_match_requests(void **state) {
        static const struct {
                const char *name;
                unsigned long request;
        } known[] = {
                { "TCGETS", TCGETS },     { "TIOCGWINSZ", TIOCGWINSZ }, { "FIONBIO", FIONBIO },
                { "FIONREAD", FIONREAD }, { "FIOCLEX", FIOCLEX },       { "FIONCLEX", FIONCLEX },
        };
        const IoctlRule *rules;
        size_t n;

        /* The name is what a reviewer reads; it must be the request that gets compiled. */
        rules = seccomp_ioctl_rules(&n);
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < ELEMENTSOF(known); k++)
                        if (streq(rules[i].name, known[k].name) && rules[i].request != known[k].request)
                                fail_msg("ioctl row '%s' has request 0x%lx, expected 0x%lx", rules[i].name,
                                         rules[i].request, known[k].request);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tables_present),
                cmocka_unit_test(test_every_row_has_a_reason),
                cmocka_unit_test(test_rows_sorted_and_unique),
                cmocka_unit_test(test_language_rows_not_in_common),
                cmocka_unit_test(test_names_resolve_on_x86_64),
                cmocka_unit_test(test_rows_resolve_on_aarch64_or_are_marked),
                cmocka_unit_test(test_actions_valid),
                cmocka_unit_test(test_never_allow_only_execve_at_startup),
                cmocka_unit_test(test_never_allow_list),
                cmocka_unit_test(test_ioctl_table),
                cmocka_unit_test(test_ioctl_names_match_requests),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
