"""cpusplit — where the CPU of a request goes: counters read before and after a chunk of requests.

bench/run --throughput reads a source's counters (microseconds of CPU, monotonic) once the service is
idle before a chunk and once it is idle again after it; the difference divided by the requests answered
is the CPU per request, split into parts. Two sources:

- CgroupSplit(root): a systemd's cgroup tree (bench/systemd: the container's root in the host's cgroup2
  hierarchy, the unified one on this hybrid host). Per cgroup, cpu.stat's usage_usec (cgroup2: every
  non-root cgroup has it, with or without the cpu controller), else cpuacct.usage (v1, ns). A removed
  cgroup's usage stays in its parent (cgroup2 flushes it there on release; v1 cpuacct charges every
  ancestor), so the workers, whose difysandbox@.service instances come and go, are difysandbox.slice
  minus the units in it that stay (the runner, the runs' slice, the manager).
- ProcSplit(pid): `difysandbox serve` (no systemd): /proc/PID/stat's utime+stime of serve itself, its
  children's cutime+cstime (the workers it reaped), and of the children that live from before the
  first chunk to after the last (the runner, in-process but forked, and its helpers): their own time
  and their reaped children's (the runs).

Both add, from /proc: the kernel's threads (children of kthreadd; their schedstat run time in ns:
kworkers doing cgroup release, RCU callbacks, network namespace cleanup, BPF), the bench client's own
CPU (getrusage), and the machine's busy time (/proc/stat). Unattributed is the machine minus all of
these: other work on the machine (a shared machine: other helpers' load), interrupts, short-lived
kernel threads that ended between two reads.
"""

import os
import resource
import time

USER_HZ = os.sysconf("SC_CLK_TCK")


def _read(path):
    with open(path) as f:
        return f.read()


def cgroup_usage_usec(path):
    """CPU used by the cgroup at path and its descendants (removed ones included), in µs; None if gone."""
    try:
        for line in _read(os.path.join(path, "cpu.stat")).splitlines():
            k, _, v = line.partition(" ")
            if k == "usage_usec":
                return int(v)
    except FileNotFoundError:
        pass
    try:
        return int(_read(os.path.join(path, "cpuacct.usage"))) // 1000
    except FileNotFoundError:
        return None


def proc_times_usec(pid):
    """(own utime+stime, reaped children's cutime+cstime) of a process, in µs; None when it is gone."""
    try:
        fields = _read(f"/proc/{pid}/stat").rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    own = int(fields[11]) + int(fields[12])
    kids = int(fields[13]) + int(fields[14])
    return own * 1_000_000 // USER_HZ, kids * 1_000_000 // USER_HZ


KTHREAD_KINDS = ("kworker", "ksoftirqd", "rcu", "other")


def kernel_threads_usec(proc="/proc"):
    """{(pid, start time): (kind, run time in µs)} of every kernel thread (kthreadd and its children).
    Kernel threads come and go (kworkers of the unbound pools end when idle): a difference must be taken
    thread by thread, and the time of one that ended between two reads is lost (an undercount)."""
    out = {}
    for d in os.listdir(proc):
        if not d.isdigit():
            continue
        try:
            stat = _read(f"{proc}/{d}/stat")
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat.rpartition(")")[2].split()
            if d != "2" and rest[1] != "2":
                continue
            ns = int(_read(f"{proc}/{d}/schedstat").split()[0])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        kind = next((k for k in KTHREAD_KINDS if comm.startswith(k)), "other")
        out[(int(d), rest[19])] = (kind, ns // 1000)
    return out


def machine_busy_usec(proc="/proc"):
    """The machine's busy CPU time (all CPUs: user, nice, system, irq, softirq, steal), in µs."""
    f = _read(f"{proc}/stat").splitlines()[0].split()
    assert f[0] == "cpu"
    busy = sum(int(x) for i, x in enumerate(f[1:9]) if i not in (3, 4))  # not idle, iowait
    return busy * 1_000_000 // USER_HZ


def client_usec():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return int((r.ru_utime + r.ru_stime) * 1_000_000)


def common_counters():
    return {"kthreads": kernel_threads_usec(), "client": client_usec(), "machine": machine_busy_usec(),
            "wall": time.monotonic_ns() // 1000}


def net_kernel_threads(per_req, delta, requests, background_rate):
    """Adds the kernel threads' time net of the background: minus background_rate (kernel thread µs per
    µs of wall time, measured in the floor's chunks, which start processes but make no cgroups or
    namespaces) times the wall time between the reads. On a shared machine a rough estimate."""
    if per_req is not None and background_rate is not None and requests:
        per_req["kernel threads, net"] = (delta["kthreads"] - background_rate * delta["wall"]) / requests / 1000


class CgroupSplit:
    """A systemd's units, from its cgroup tree at root (see the module's docstring)."""

    # (part, cgroup path below root); workers are computed.
    UNITS = [("PID 1", "init.scope"), ("dbus", "system.slice/dbus.service"),
             ("journald", "system.slice/systemd-journald.service"),
             ("runner", "difysandbox.slice/difysandbox-runner.service"),
             ("runs", "difysandbox.slice/difysandbox-runs.slice"),
             ("manager", "difysandbox.slice/difysandbox-manager.service")]
    PARTS = ["PID 1", "dbus", "journald", "workers", "runner", "runs", "container other"]
    label = "systemd"

    def __init__(self, root):
        self.root = root
        if cgroup_usage_usec(root) is None:
            raise ValueError(f"{root}: no cpu.stat or cpuacct.usage (not a cgroup?)")

    def workers_alive(self):
        """Per-connection services in difysandbox.slice (difysandbox@.service instances, or a probe's)
        whose cgroup still exists."""
        stay = {path.rpartition("/")[2] for _, path in self.UNITS}
        try:
            return sum(1 for d in os.listdir(os.path.join(self.root, "difysandbox.slice"))
                       if d.endswith(".service") and d not in stay)
        except FileNotFoundError:
            return 0

    def read(self):
        c = {"container": cgroup_usage_usec(self.root) or 0,
             "slice": cgroup_usage_usec(os.path.join(self.root, "difysandbox.slice")) or 0}
        for part, path in self.UNITS:
            c[part] = cgroup_usage_usec(os.path.join(self.root, path)) or 0  # not (yet) there: nothing used
        c.update(common_counters())
        return c

    @staticmethod
    def parts(d):
        """The split of a difference of two read()s."""
        p = {k: d[k] for k in ("PID 1", "dbus", "journald", "runner", "runs")}
        p["workers"] = d["slice"] - d["runner"] - d["runs"] - d["manager"]
        p["container other"] = d["container"] - d["PID 1"] - d["dbus"] - d["journald"] - d["slice"]
        return p


class ProcSplit:
    """`difysandbox serve` at pid, from /proc (see the module's docstring)."""

    PARTS = ["serve", "workers", "runner", "runs"]
    label = "serve"

    def __init__(self, pid):
        self.pid = pid
        self.stay = set(self.children())  # the runner and its helpers, forked at start

    def children(self):
        kids = []
        try:
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                kids += [int(x) for x in _read(f"/proc/{self.pid}/task/{tid}/children").split()]
        except FileNotFoundError:
            pass
        return kids

    def workers_alive(self):
        return sum(1 for k in self.children() if k not in self.stay)

    def read(self):
        own, kids = proc_times_usec(self.pid) or (0, 0)
        c = {"serve": own, "reaped": kids, "stay_own": 0, "stay_reaped": 0, "stay_gone": 0}
        for k in self.stay:
            t = proc_times_usec(k)
            if t is None:
                c["stay_gone"] += 1  # then its time went into serve's reaped children: the split is void
                continue
            c["stay_own"] += t[0]
            c["stay_reaped"] += t[1]
        c.update(common_counters())
        return c

    @staticmethod
    def parts(d):
        return {"serve": d["serve"], "workers": d["reaped"], "runner": d["stay_own"], "runs": d["stay_reaped"]}


def diff(after, before):
    """after - before, counter by counter; the kernel threads thread by thread (one new since before
    counts from 0), summed by kind as kthreads:KIND and in all as kthreads."""
    d = {k: after[k] - before.get(k, 0) for k in after if k != "kthreads"}
    kinds = dict.fromkeys(KTHREAD_KINDS, 0)
    for t, (kind, usec) in after["kthreads"].items():
        kinds[kind] += usec - before["kthreads"].get(t, (kind, 0))[1]
    d["kthreads"] = sum(kinds.values())
    d.update({f"kthreads:{k}": v for k, v in kinds.items()})
    return d


def per_request(source, delta, requests):
    """{part: ms per request} of a summed difference, with the kernel threads, client, machine and the
    unattributed rest; the service's total is its parts plus the kernel threads."""
    if not requests:
        return None
    p = source.parts(delta)
    out = {k: p[k] / requests / 1000 for k in source.PARTS}
    out["kernel threads"] = delta["kthreads"] / requests / 1000
    out["service total"] = sum(out.values())
    out["client (bench)"] = delta["client"] / requests / 1000
    out["machine"] = delta["machine"] / requests / 1000
    out["unattributed"] = out["machine"] - out["service total"] - out["client (bench)"]
    for k in ("kworker", "ksoftirqd", "rcu", "other"):
        out[f"  kthreads: {k}"] = delta[f"kthreads:{k}"] / requests / 1000
    return out
