#pragma once
/* cgroup: owns the standalone cgroups of runs (DESIGN §3.4, used where systemd is not PID 1). They live
 * below this process's own cgroup, as <own>/difysandbox/run-<instance>-<uid>: in the cgroup v2 hierarchy
 * where its memory, pids and cpu controllers are available, else in the v1 memory, pids and cpu
 * hierarchies. A run cgroup is keyed by the instance (instance.h) and the run's UID, so whoever holds
 * that UID in that instance's pool (uidpool.h) owns it, a cgroup left by a killed worker is cleaned by
 * the next holder of the UID, and another instance sharing <own> never touches it. Nothing above
 * <own>/difysandbox is written. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* On v2, the leaf of our own cgroup that we move ourselves into before enabling controllers for the
 * runs' cgroups (the no-internal-process rule). */
#define CGROUP_SUPERVISOR_LEAF "supervisor"

typedef struct CgroupLimits {
        uint64_t memory_max;        /* bytes; swap is never allowed */
        uint32_t cpu_quota_percent; /* percent of one CPU */
        uint32_t tasks_max;
} CgroupLimits;

typedef struct CgroupLayout CgroupLayout;
typedef struct RunCgroup RunCgroup;

/* Finds the hierarchies and this process's place in them, for the runs of instance (no '/' or '-').
 * On v2 it also enables the controllers below our cgroup, after moving every process in it into its
 * leaf CGROUP_SUPERVISOR_LEAF. -EOPNOTSUPP when no usable memory, pids and cpu controllers are found. */
int cgroup_layout_detect(const char *instance, CgroupLayout **ret);
CgroupLayout *cgroup_layout_free(CgroupLayout *layout);
bool cgroup_layout_is_v2(const CgroupLayout *layout);

/* The UIDs that have a run cgroup of this instance now, in any hierarchy (a UID may be listed once per
 * hierarchy). *ret is malloc()ed. */
int cgroup_list_runs(const CgroupLayout *layout, uid_t **ret, size_t *ret_n);
/* Kills what is left in uid's run cgroup and removes it, in every hierarchy; the caller must hold the UID.
 * With wait, waits up to a second per hierarchy for dying tasks; without, -EBUSY means "killed, try
 * again later". */
int cgroup_run_remove(const CgroupLayout *layout, uid_t uid, bool wait);

/* Creates the run cgroup of uid (after cleaning a stale one) and writes the limits. */
int cgroup_run_create(const CgroupLayout *layout, uid_t uid, const CgroupLimits *limits, RunCgroup **ret);
int cgroup_run_attach(RunCgroup *cg, pid_t pid);
/* The run cgroup's directory, for clone3(CLONE_INTO_CGROUP) (a child born in it needs no attach).
 * -EOPNOTSUPP on v1, where a run has a cgroup in each of three hierarchies. */
int cgroup_run_open(RunCgroup *cg);
/* oom_kills: OOM kills inside the run so far; memory_peak: the most memory it held, 0 when unknown. */
int cgroup_run_stats(RunCgroup *cg, uint64_t *ret_oom_kills, uint64_t *ret_memory_peak);
/* For a run in a systemd scope, which systemd removes as soon as it is empty: an fd of the file that
 * counts OOM kills in pid's memory cgroup (v2 memory.events; v1 memory.oom_control), opened while pid
 * lives, for cgroup_read_oom_kills() when it dies. -ENOENT unless that cgroup is the scope's own, named
 * name (not one it shares with others). *ret_parent_fd: where the parent's file counts its whole
 * subtree's kills (v2 without memory_localevents), that file, which outlives the scope; else -errno. */
int cgroup_open_oom_counter(pid_t pid, const char *name, int *ret_parent_fd);
/* The oom_kill count of such a file; -ENODEV once the cgroup is gone. */
int cgroup_read_oom_kills(int fd, uint64_t *ret);
/* Kills whatever is left in the run cgroup (all of it is the run's) and removes it. NULL-safe. */
RunCgroup *cgroup_run_destroy(RunCgroup *cg);
