/* cgroup: see cgroup.h. */

#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup-io.h"
#include "common/cleanup.h"
#include "common/fileio.h"
#include "common/parse.h"

typedef enum Hierarchy {
        HIERARCHY_MEMORY, /* v1 memory, or the unified hierarchy */
        HIERARCHY_PIDS,
        HIERARCHY_CPU,
        _HIERARCHY_MAX,
} Hierarchy;

struct CgroupLayout {
        bool v2;
        char *instance;             /* instance.h: run cgroups are run-<instance>-<uid> */
        char *base[_HIERARCHY_MAX]; /* <mount><own>/difysandbox; v2 uses base[HIERARCHY_MEMORY] only */
};

struct RunCgroup {
        const CgroupLayout *layout;
        char *path[_HIERARCHY_MAX];
};

/* cgroup.procs of a run holds at most tasks_max PIDs; the other files are a few lines. */
#define CGROUP_FILE_MAX (1U << 20)

static const char *const v1_controllers[_HIERARCHY_MAX] = { "memory", "pids", "cpu" };

DEFINE_POINTER_CLEANUP(CgroupLayout *, cgroup_layout_free);
DEFINE_POINTER_CLEANUP(RunCgroup *, cgroup_run_destroy);

static int write_file(const char *dir, const char *file, const char *format, ...)
        __attribute__((format(printf, 3, 4)));
static int write_file(const char *dir, const char *file, const char *format, ...) {
        _cleanup_free_ char *path = NULL, *value = NULL;
        _cleanup_close_ int fd = -EBADF;
        va_list ap;
        int len;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        va_start(ap, format);
        len = vasprintf(&value, format, ap);
        va_end(ap);
        if (len < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, value, (size_t) len) != len)
                return errno > 0 ? -errno : -EIO;
        return 0;
}

/* Reads "key value" lines (memory.events, memory.oom_control) and returns value of key. */
static int read_keyed(const char *dir, const char *file, const char *key, uint64_t *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t klen = strlen(key);
        int r;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        r = read_full_file(path, CGROUP_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
                        return parse_uint64(line + klen + 1, ret);
        return -ENOENT;
}

static int read_number(const char *dir, const char *file, uint64_t *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        r = read_full_file(path, CGROUP_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = '\0';
        return parse_uint64(text, ret);
}

/* Whether the comma-separated options hold opt (options is not changed). */
static bool has_option(const char *options, const char *opt) {
        size_t len = strlen(opt);

        for (const char *o = options;; o++) {
                if (strncmp(o, opt, len) == 0 && (o[len] == ',' || o[len] == '\0'))
                        return true;
                o = strchr(o, ',');
                if (!o)
                        return false;
        }
}

/* The mount point of the hierarchy whose super options name controller (v1), or of cgroup2 when
 * controller is NULL, with the mount's root (usually "/"). From /proc/self/mountinfo.
 * ret_local_events (NULL-able, unified hierarchy only): whether it is mounted with memory_localevents,
 * under which a cgroup's memory.events count its own events and not its subtree's. */
static int find_mount(const char *controller, char **ret_mount, char **ret_root, bool *ret_local_events) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (getline(&line, &n, f) > 0) {
                char *fields[16] = { 0 }, *save = NULL, *p, *fstype, *super;
                size_t nf = 0;

                for (p = strtok_r(line, " \n", &save); p && nf < 16; p = strtok_r(NULL, " \n", &save))
                        fields[nf++] = p;
                /* id parent major:minor root mountpoint options [optional...] - fstype source super */
                size_t dash = 6;
                while (dash < nf && strcmp(fields[dash], "-") != 0)
                        dash++;
                if (dash + 3 >= nf + 1 || dash + 3 > nf)
                        continue;
                fstype = fields[dash + 1];
                super = fields[dash + 3];
                if (!controller) {
                        if (strcmp(fstype, "cgroup2") != 0)
                                continue;
                        if (ret_local_events)
                                *ret_local_events = has_option(super, "memory_localevents");
                } else {
                        bool found = false;
                        if (strcmp(fstype, "cgroup") != 0)
                                continue;
                        for (char *o = strtok_r(super, ",", &save); o; o = strtok_r(NULL, ",", &save))
                                if (strcmp(o, controller) == 0)
                                        found = true;
                        if (!found)
                                continue;
                }
                *ret_mount = strdup(fields[4]);
                *ret_root = strdup(fields[3]);
                if (!*ret_mount || !*ret_root) {
                        free(*ret_mount);
                        free(*ret_root);
                        return -ENOMEM;
                }
                return 0;
        }
        return -ENOENT;
}

/* The cgroup of pid (0: this process) in the hierarchy named by controller ("" for the unified one). */
static int proc_cgroup(pid_t pid, const char *controller, char **ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char proc[64];
        size_t n = 0;

        if (pid > 0)
                (void) snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int) pid);
        else
                strcpy(proc, "/proc/self/cgroup");
        f = fopen(proc, "re");
        if (!f)
                return -errno;
        while (getline(&line, &n, f) > 0) {
                char *ctrls, *path, *save = NULL;
                bool match = false;

                line[strcspn(line, "\n")] = '\0';
                ctrls = strchr(line, ':');
                if (!ctrls)
                        continue;
                path = strchr(++ctrls, ':');
                if (!path)
                        continue;
                *path++ = '\0';
                if (*controller == '\0')
                        match = *ctrls == '\0';
                else
                        for (char *c = strtok_r(ctrls, ",", &save); c; c = strtok_r(NULL, ",", &save))
                                if (strcmp(c, controller) == 0)
                                        match = true;
                if (!match)
                        continue;
                *ret = strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

/* The directory of pid's cgroup (0: ours) in the hierarchy of controller ("" for the unified one),
 * through its mount: *ret_mount, and *ret_rel relative to it ("" for the mount's root). */
static int cgroup_dir(pid_t pid, const char *controller, char **ret_mount, char **ret_rel,
                      bool *ret_local_events) {
        _cleanup_free_ char *mount = NULL, *root = NULL, *own = NULL, *rel = NULL;
        const char *p;
        int r;

        r = find_mount(*controller ? controller : NULL, &mount, &root, ret_local_events);
        if (r < 0)
                return r;
        r = proc_cgroup(pid, controller, &own);
        if (r < 0)
                return r;
        p = own;
        if (strcmp(root, "/") != 0) {
                size_t len = strlen(root);
                if (strncmp(own, root, len) != 0 || (own[len] != '/' && own[len] != '\0'))
                        return -ENOENT; /* the cgroup is not visible through this mount */
                p = own + len;
        }
        rel = strdup(strcmp(p, "/") == 0 ? "" : p);
        if (!rel)
                return -ENOMEM;
        *ret_mount = TAKE_PTR(mount);
        *ret_rel = TAKE_PTR(rel);
        return 0;
}

/* <mount><own path relative to the mount's root>/difysandbox */
static int base_path(const char *controller, char **ret) {
        _cleanup_free_ char *mount = NULL, *rel = NULL;
        int r;

        r = cgroup_dir(0, controller, &mount, &rel, NULL);
        if (r < 0)
                return r;
        /* On v2 we moved ourselves into a leaf of our cgroup (move_into_leaf()); our cgroup is its
         * parent still, for a detection after that (a reload, a forked child). */
        size_t len = strlen(rel), leaf = strlen("/" CGROUP_SUPERVISOR_LEAF);
        if (*controller == '\0' && len >= leaf && streq(rel + len - leaf, "/" CGROUP_SUPERVISOR_LEAF))
                len -= leaf;
        return asprintf(ret, "%s%.*s/difysandbox", mount, (int) len, rel) < 0 ? -ENOMEM : 0;
}

static bool v2_has_controllers(const char *base) {
        _cleanup_free_ char *parent = NULL, *path = NULL, *text = NULL;
        static const char *const needed[] = { "memory", "pids", "cpu" };
        char *slash;

        parent = strdup(base);
        if (!parent)
                return false;
        slash = strrchr(parent, '/');
        if (!slash)
                return false;
        *slash = '\0';
        if (asprintf(&path, "%s/cgroup.controllers", parent) < 0 ||
            read_full_file(path, CGROUP_FILE_MAX, &text, NULL) < 0)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(needed); i++) {
                bool found = false;
                char *save = NULL;
                _cleanup_free_ char *copy = strdup(text);
                if (!copy)
                        return false;
                for (char *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                        if (strcmp(w, needed[i]) == 0)
                                found = true;
                if (!found)
                        return false;
        }
        return true;
}

/* Moves every process of the cgroup at own into its leaf CGROUP_SUPERVISOR_LEAF. They are all ours: own
 * is the cgroup we were started in (delegated to us), and nothing above it is touched. */
static int move_into_leaf(const char *own) {
        _cleanup_free_ char *leaf = NULL, *procs = NULL, *text = NULL;
        int r;

        if (asprintf(&leaf, "%s/" CGROUP_SUPERVISOR_LEAF, own) < 0 ||
            asprintf(&procs, "%s/cgroup.procs", own) < 0)
                return -ENOMEM;
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = read_full_file(procs, CGROUP_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                uint64_t pid;
                if (parse_uint64(line, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                r = write_file(leaf, "cgroup.procs", "%d", (int) pid);
                if (r < 0 && r != -ESRCH) /* it may have exited meanwhile */
                        return r;
        }
        return 0;
}

/* Enables memory, pids and cpu for our children on v2. The no-internal-process rule forbids that while
 * processes sit in our own cgroup (EBUSY): so, as programs that systemd delegates a cgroup to do, we first
 * move ourselves (and whatever we forked) into a leaf of it, then enable the controllers in our own
 * cgroup and in <own>/difysandbox, below which the runs live. A process forked meanwhile lands in our
 * cgroup again: a few rounds settle that. */
static int ensure_v2_delegation(const CgroupLayout *layout) {
        _cleanup_free_ char *own = NULL;
        int r = -EBUSY;

        own = strdup(layout->base[HIERARCHY_MEMORY]);
        if (!own)
                return -ENOMEM;
        *strrchr(own, '/') = '\0';
        for (int i = 0; i < 10 && r == -EBUSY; i++) {
                r = write_file(own, "cgroup.subtree_control", "+memory +pids +cpu");
                if (r == -EBUSY) {
                        int k = move_into_leaf(own);
                        if (k < 0)
                                return k;
                }
        }
        if (r < 0)
                return r;
        if (mkdir(layout->base[HIERARCHY_MEMORY], 0755) < 0 && errno != EEXIST)
                return -errno;
        return write_file(layout->base[HIERARCHY_MEMORY], "cgroup.subtree_control", "+memory +pids +cpu");
}

int cgroup_layout_detect(const char *instance, CgroupLayout **ret) {
        _cleanup_(cgroup_layout_freep) CgroupLayout *layout = NULL;
        _cleanup_free_ char *v2base = NULL;
        int r;

        if (!instance || !*instance || strpbrk(instance, "/-"))
                return -EINVAL;
        layout = calloc(1, sizeof(*layout));
        if (!layout)
                return -ENOMEM;
        layout->instance = strdup(instance);
        if (!layout->instance)
                return -ENOMEM;

        if (base_path("", &v2base) >= 0 && v2_has_controllers(v2base)) {
                layout->v2 = true;
                layout->base[HIERARCHY_MEMORY] = TAKE_PTR(v2base);
                r = ensure_v2_delegation(layout); /* once, at start: it may move us */
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(layout);
                return 0;
        }

        for (Hierarchy h = 0; h < _HIERARCHY_MAX; h++) {
                r = base_path(v1_controllers[h], &layout->base[h]);
                if (r < 0)
                        return r == -ENOENT ? -EOPNOTSUPP : r;
        }
        *ret = TAKE_PTR(layout);
        return 0;
}

CgroupLayout *cgroup_layout_free(CgroupLayout *layout) {
        if (layout) {
                for (Hierarchy h = 0; h < _HIERARCHY_MAX; h++)
                        free(layout->base[h]);
                free(layout->instance);
                free(layout);
        }
        return NULL;
}

bool cgroup_layout_is_v2(const CgroupLayout *layout) {
        return layout->v2;
}

static int run_path(const CgroupLayout *layout, Hierarchy h, uid_t uid, char **ret) {
        return asprintf(ret, "%s/run-%s-%u", layout->base[h], layout->instance, (unsigned) uid) < 0 ? -ENOMEM
                                                                                                    : 0;
}

static void sleep_usec(long usec) {
        struct timespec ts = { .tv_sec = usec / 1000000, .tv_nsec = (usec % 1000000) * 1000 };
        (void) nanosleep(&ts, NULL); /* a shorter sleep only means one more try */
}

/* SIGKILLs every process in the cgroup at path. Everything there is a process of this run. */
static int kill_all(const char *path, bool v2) {
        _cleanup_free_ char *procs = NULL, *text = NULL;
        int r;

        if (v2 && write_file(path, "cgroup.kill", "1") >= 0)
                return 0;
        if (asprintf(&procs, "%s/cgroup.procs", path) < 0)
                return -ENOMEM;
        r = read_full_file(procs, CGROUP_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                uint64_t pid;
                if (parse_uint64(line, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                (void) kill((pid_t) pid, SIGKILL); /* it may have exited meanwhile */
        }
        return 0;
}

/* Removes the cgroup at path, killing what is left in it. With wait, waits up to a second for the kernel
 * to let dying tasks go; without, tries once, so that a caller on an event loop never stalls (what is
 * left is killed, and gone by its next try). Absent is success. */
static int remove_cgroup(const char *path, bool v2, bool wait) {
        for (int i = 0; i < (wait ? 1000 : 1); i++) {
                if (rmdir(path) >= 0 || errno == ENOENT)
                        return 0;
                if (errno != EBUSY)
                        return -errno;
                (void) kill_all(path, v2);
                if (wait)
                        sleep_usec(i < 10 ? 100 : 1000);
        }
        return -EBUSY;
}

static int write_limits_v2(const char *path, const CgroupLimits *limits) {
        int r;

        r = write_file(path, "memory.max", "%" PRIu64, limits->memory_max);
        if (r < 0)
                return r;
        r = write_file(path, "memory.swap.max", "0");
        if (r < 0 && r != -ENOENT) /* absent without swap accounting: then there is no swap to use */
                return r;
        r = write_file(path, "pids.max", "%" PRIu32, limits->tasks_max);
        if (r < 0)
                return r;
        return write_file(path, "cpu.max", "%" PRIu64 " 100000",
                          (uint64_t) limits->cpu_quota_percent * 1000);
}

static int write_limits_v1(RunCgroup *cg, const CgroupLimits *limits) {
        int r;

        r = write_file(cg->path[HIERARCHY_MEMORY], "memory.limit_in_bytes", "%" PRIu64, limits->memory_max);
        if (r < 0)
                return r;
        r = write_file(cg->path[HIERARCHY_MEMORY], "memory.memsw.limit_in_bytes", "%" PRIu64,
                       limits->memory_max);
        if (r < 0 && r != -ENOENT) /* absent without swap accounting: then there is no swap to use */
                return r;
        r = write_file(cg->path[HIERARCHY_PIDS], "pids.max", "%" PRIu32, limits->tasks_max);
        if (r < 0)
                return r;
        r = write_file(cg->path[HIERARCHY_CPU], "cpu.cfs_period_us", "100000");
        if (r < 0)
                return r;
        return write_file(cg->path[HIERARCHY_CPU], "cpu.cfs_quota_us", "%" PRIu64,
                          (uint64_t) limits->cpu_quota_percent * 1000);
}

/* Appends the UIDs of this instance's run cgroups in dir to *uids. */
static int list_runs_in(const CgroupLayout *layout, const char *dir, uid_t **uids, size_t *n,
                        size_t *alloc) {
        _cleanup_(closedirp) DIR *d = NULL;
        size_t plen = strlen(layout->instance);
        struct dirent *de;

        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d))) {
                uint32_t uid;
                /* run-<instance>-<uid>: another instance's runs (or an older version's run-<uid>) are not
                 * ours to list, whatever their UID */
                if (strncmp(de->d_name, "run-", 4) != 0 ||
                    strncmp(de->d_name + 4, layout->instance, plen) != 0 || de->d_name[4 + plen] != '-' ||
                    parse_uint32(de->d_name + 5 + plen, &uid) < 0)
                        continue;
                if (*n == *alloc) {
                        size_t grown = *alloc ? *alloc * 2 : 16;
                        uid_t *u = realloc(*uids, grown * sizeof(uid_t));
                        if (!u)
                                return -ENOMEM;
                        *uids = u;
                        *alloc = grown;
                }
                (*uids)[(*n)++] = (uid_t) uid;
        }
        return 0;
}

int cgroup_list_runs(const CgroupLayout *layout, uid_t **ret, size_t *ret_n) {
        _cleanup_free_ uid_t *uids = NULL;
        Hierarchy nh = layout->v2 ? 1 : _HIERARCHY_MAX;
        size_t n = 0, alloc = 0;
        int r;

        /* Every hierarchy: a run whose removal failed in one of them is still a run to sweep there. */
        for (Hierarchy h = 0; h < nh; h++) {
                r = list_runs_in(layout, layout->base[h], &uids, &n, &alloc);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(uids);
        *ret_n = n;
        return 0;
}

int cgroup_run_remove(const CgroupLayout *layout, uid_t uid, bool wait) {
        Hierarchy n = layout->v2 ? 1 : _HIERARCHY_MAX;
        int r, ret = 0;

        for (Hierarchy h = 0; h < n; h++) { /* each hierarchy, whatever became of the others */
                _cleanup_free_ char *path = NULL;
                r = run_path(layout, h, uid, &path);
                if (r < 0)
                        return r;
                r = remove_cgroup(path, layout->v2, wait);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

int cgroup_run_create(const CgroupLayout *layout, uid_t uid, const CgroupLimits *limits, RunCgroup **ret) {
        _cleanup_(cgroup_run_destroyp) RunCgroup *cg = NULL;
        Hierarchy n = layout->v2 ? 1 : _HIERARCHY_MAX;
        int r;

        if (limits->memory_max == 0 || limits->cpu_quota_percent == 0 || limits->tasks_max == 0)
                return -EINVAL;

        cg = calloc(1, sizeof(*cg));
        if (!cg)
                return -ENOMEM;
        cg->layout = layout;
        for (Hierarchy h = 0; h < n; h++) {
                r = run_path(layout, h, uid, &cg->path[h]);
                if (r < 0)
                        return r;
                /* A cgroup left by a holder of this UID that was killed: it is ours now. */
                r = remove_cgroup(cg->path[h], layout->v2, true);
                if (r < 0)
                        return r;
                if (mkdir(layout->base[h], 0755) < 0 && errno != EEXIST)
                        return -errno;
                if (mkdir(cg->path[h], 0755) < 0)
                        return -errno;
        }

        r = layout->v2 ? write_limits_v2(cg->path[HIERARCHY_MEMORY], limits) : write_limits_v1(cg, limits);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(cg);
        return 0;
}

int cgroup_run_open(RunCgroup *cg) {
        int fd;

        if (!cg->layout->v2)
                return -EOPNOTSUPP; /* v1: one cgroup per hierarchy, and clone3() takes one */
        fd = open(cg->path[HIERARCHY_MEMORY], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int cgroup_open_oom_counter(pid_t pid, const char *name, int *ret_parent_fd) {
        _cleanup_free_ char *mount = NULL, *rel = NULL, *path = NULL, *parent = NULL;
        const char *file = "memory.oom_control", *base;
        bool local_events = false;
        int r, fd;

        *ret_parent_fd = -EOPNOTSUPP;
        /* The memory controller is on v1 (a hybrid host) or on the unified hierarchy. */
        r = cgroup_dir(pid, "memory", &mount, &rel, NULL);
        if (r == -ENOENT) {
                r = cgroup_dir(pid, "", &mount, &rel, &local_events);
                file = "memory.events";
        }
        if (r < 0)
                return r;
        /* Only the run's own cgroup counts only its kills: where systemd cannot give the scope one in
         * the memory hierarchy (a container with read-only v1 hierarchies), pid sits in a cgroup shared
         * with others, whose count says nothing about this run. */
        base = strrchr(rel, '/');
        if (!base || !streq(base + 1, name))
                return -ENOENT;
        if (asprintf(&path, "%s%s/%s", mount, rel, file) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* v2's memory.events of the parent (the runs slice) count the kills of its whole subtree, unless
         * memory_localevents; v1's memory.oom_control counts a cgroup's own only. */
        if (streq(file, "memory.events") && !local_events &&
            asprintf(&parent, "%s%.*s/%s", mount, (int) (base - rel), rel, file) >= 0) {
                *ret_parent_fd = open(parent, O_RDONLY | O_CLOEXEC);
                if (*ret_parent_fd < 0)
                        *ret_parent_fd = -errno;
        }
        return fd;
}

int cgroup_read_oom_kills(int fd, uint64_t *ret) {
        char buf[4096];
        ssize_t n;

        n = pread(fd, buf, sizeof(buf) - 1, 0); /* from 0: the kernel renders it afresh */
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (strncmp(line, "oom_kill ", 9) == 0)
                        return parse_uint64(line + 9, ret);
        return -ENOENT; /* a kernel before 4.13 counts none */
}

int cgroup_run_attach(RunCgroup *cg, pid_t pid) {
        Hierarchy n = cg->layout->v2 ? 1 : _HIERARCHY_MAX;
        int r;

        for (Hierarchy h = 0; h < n; h++) {
                r = write_file(cg->path[h], "cgroup.procs", "%d", (int) pid);
                if (r < 0)
                        return r;
        }
        return 0;
}

int cgroup_run_stats(RunCgroup *cg, uint64_t *ret_oom_kills, uint64_t *ret_memory_peak) {
        const char *mem = cg->path[HIERARCHY_MEMORY];
        uint64_t oom = 0, peak = 0;
        int r;

        if (cg->layout->v2) {
                r = read_keyed(mem, "memory.events", "oom_kill", &oom);
                if (r < 0)
                        return r;
                (void) read_number(mem, "memory.peak", &peak); /* Linux 5.19+; 0 = unknown before */
        } else {
                r = read_keyed(mem, "memory.oom_control", "oom_kill", &oom);
                if (r < 0)
                        return r;
                (void) read_number(mem, "memory.max_usage_in_bytes", &peak); /* 0 = unknown */
        }
        *ret_oom_kills = oom;
        *ret_memory_peak = peak;
        return 0;
}

RunCgroup *cgroup_run_destroy(RunCgroup *cg) {
        if (!cg)
                return NULL;
        /* What stays is removed by the next holder of the UID, or by the runner's sweep. */
        for (Hierarchy h = 0; h < _HIERARCHY_MAX; h++) {
                if (cg->path[h])
                        (void) remove_cgroup(cg->path[h], cg->layout->v2, true);
                free(cg->path[h]);
        }
        free(cg);
        return NULL;
}
