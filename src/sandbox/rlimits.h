#pragma once
/* rlimits: the run's resource limits that are per process rather than per cgroup (DESIGN §3.9): CPU
 * seconds (hard = soft, so the kernel sends SIGKILL, which PID 1 of a namespace cannot ignore), open
 * files, tasks of the run's UID (a second wall behind pids.max), file size (the /tmp cap) and no core
 * dumps. Set in the child while still root, so that the hard limits hold. */

typedef struct RunPlan RunPlan;

int rlimits_apply(const RunPlan *plan);
