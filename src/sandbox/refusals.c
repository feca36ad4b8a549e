/* refusals: see refusals.h. */

#include "refusals.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <seccomp.h>

#include "common/cleanup.h"
#include "seccomp-policy.h"

/* clone() flags that make namespaces: only an escape attempt asks for them inside a run (the filter's
 * thread rule refuses any of them, and so does the kernel for an unprivileged caller). */
#define CLONE_NAMESPACE_FLAGS                                                                      \
        ((uint64_t) (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                     CLONE_NEWPID | CLONE_NEWNET))

const char *refusals_name(int nr, char *buf, size_t size) {
        _cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

        if (name)
                (void) snprintf(buf, size, "%s", name);
        else
                (void) snprintf(buf, size, "syscall %d", nr);
        return buf;
}

static void record(Refusals *r, int nr, int error, uint32_t count) {
        r->total += count;
        for (unsigned i = 0; i < r->n; i++)
                if (r->calls[i].nr == nr) {
                        r->calls[i].count += count;
                        return;
                }
        if (r->n < REFUSALS_MAX)
                r->calls[r->n++] = (Refusal){ .nr = nr, .count = count, .error = error };
}

/* The errno the call gets, or 0 when it ends the run. */
static int decide(const struct seccomp_data *d) {
        _cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, d->nr);

        if (!name)
                return ENOSYS; /* a number this libseccomp does not know: a newer kernel's call */
        if (strcmp(name, "clone") == 0 && (d->args[0] & CLONE_NAMESPACE_FLAGS) != 0)
                return 0;
        return seccomp_refusal_answer(name).error;
}

int refusals_answer(int listener, Refusals *r) {
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        int error;

        memset(&req, 0, sizeof(req)); /* the kernel refuses a buffer that is not zeroed */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                /* ENOENT: the caller was killed (a fatal signal) before we read it; EINTR: try again. */
                return errno == ENOENT || errno == EINTR ? 0 : -errno;
        }
        error = decide(&req.data);
        record(r, (int) req.data.nr, error, 1);
        if (error == 0) {
                if (r->killed_nr < 0)
                        r->killed_nr = (int) req.data.nr;
                return 1; /* left blocked: the caller's SIGKILL ends it, and the call never runs */
        }
        resp = (struct seccomp_notif_resp){ .id = req.id, .error = -error };
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
                return -errno; /* ENOENT: the caller died meanwhile */
        return 0;
}

void refusals_merge(Refusals *into, const Refusals *more) {
        for (unsigned i = 0; i < more->n; i++)
                record(into, more->calls[i].nr, more->calls[i].error, more->calls[i].count);
        /* Refusals past the named ones were counted in more->total only. */
        uint64_t named = 0;
        for (unsigned i = 0; i < more->n; i++)
                named += more->calls[i].count;
        into->total += more->total - named;
        if (into->killed_nr < 0)
                into->killed_nr = more->killed_nr;
}

static bool creates_process(const Refusal *c) {
        return c->error == EPERM; /* fork, vfork, clone without CLONE_THREAD, execve: refusals.c's EPERM */
}

int refusals_format(const Refusals *r, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        char name[64];

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        if (r->killed_nr >= 0) {
                refusals_name(r->killed_nr, name, sizeof(name));
                const char *why = seccomp_never_allow_reason(name);
                fprintf(f, "error: system call %s is never allowed in this sandbox%s%s\n", name,
                        why ? ": it " : "", why ? why : "");
        }
        for (unsigned i = 0; i < r->n; i++) {
                const Refusal *c = &r->calls[i];
                if (c->error == 0 || creates_process(c))
                        continue;
                refusals_name(c->nr, name, sizeof(name));
                fprintf(f,
                        "error: system call %s is not allowed in this sandbox and failed with %s (see "
                        "allowed_syscalls in difysandbox.conf(5))\n",
                        name, strerrorname_np(c->error) ? strerrorname_np(c->error) : "an error");
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

void refusals_describe(const Refusals *r, char *ret_syscall, size_t syscall_size, char *ret_list,
                       size_t list_size) {
        size_t used = 0;
        char name[64];

        ret_syscall[0] = ret_list[0] = '\0';
        if (r->killed_nr >= 0)
                (void) snprintf(ret_syscall, syscall_size, "%s",
                                refusals_name(r->killed_nr, name, sizeof(name)));
        else if (r->n > 0)
                (void) snprintf(ret_syscall, syscall_size, "%s",
                                refusals_name(r->calls[0].nr, name, sizeof(name)));
        for (unsigned i = 0; i < r->n && used < list_size; i++) {
                int n = snprintf(ret_list + used, list_size - used, "%s%s:%" PRIu32, used > 0 ? " " : "",
                                 refusals_name(r->calls[i].nr, name, sizeof(name)), r->calls[i].count);
                if (n < 0 || (size_t) n >= list_size - used) {
                        ret_list[used] = '\0'; /* cut at a whole entry */
                        break;
                }
                used += (size_t) n;
        }
}
