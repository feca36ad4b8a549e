"""Tests of bench/run --throughput's arithmetic (bench/cpusplit.py, bench/run's write_doc), without a
service: a fake cgroup tree and fake counters, so that the CPU split it reports can be wrong only in ways
these tests would see. Run with the integration suite (./scripts/test)."""

import importlib.machinery
import importlib.util
import os
import sys

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")
sys.path.insert(0, HERE)
import cpusplit  # noqa: E402


def load_run():
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def cgroup(root, path, usec):
    d = os.path.join(root, path)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cpu.stat"), "w") as f:
        f.write(f"usage_usec {usec}\nuser_usec 0\nsystem_usec 0\n")


def tree(root, slice_usec, worker=None):
    cgroup(root, "", 10_000 + slice_usec)
    cgroup(root, "init.scope", 1000)
    cgroup(root, "system.slice/dbus.service", 200)
    cgroup(root, "system.slice/systemd-journald.service", 300)
    cgroup(root, "difysandbox.slice", slice_usec)
    cgroup(root, "difysandbox.slice/difysandbox-runner.service", 400)
    cgroup(root, "difysandbox.slice/difysandbox-runs.slice", 500)
    if worker:
        cgroup(root, f"difysandbox.slice/{worker}", 50)


def test_workers_are_the_slice_minus_the_units_that_stay(tmp_path, monkeypatch):
    monkeypatch.setattr(cpusplit, "common_counters", lambda: {"kthreads": {}, "client": 0, "machine": 0})
    root = str(tmp_path)
    tree(root, 1000, worker="difysandbox@1-x.service")
    split = cpusplit.CgroupSplit(root)
    assert split.workers_alive() == 1
    before = split.read()
    # the worker's cgroup is gone; its usage stayed in the slice, which grew by 3000 µs
    import shutil
    shutil.rmtree(os.path.join(root, "difysandbox.slice/difysandbox@1-x.service"))
    tree(root, 4000)
    assert split.workers_alive() == 0
    parts = split.parts(cpusplit.diff(split.read(), before))
    assert parts["workers"] == 3000
    assert parts["runner"] == 0 and parts["runs"] == 0 and parts["PID 1"] == 0
    assert parts["container other"] == 0  # the container grew by exactly the slice's growth


def test_kernel_threads_are_diffed_thread_by_thread():
    before = {"kthreads": {(10, "5"): ("kworker", 1000), (11, "6"): ("kworker", 9000)}, "client": 0, "machine": 0}
    # thread 11 ended (its 9000 µs must not count as -9000), thread 12 is new (all of its time counts)
    after = {"kthreads": {(10, "5"): ("kworker", 1500), (12, "7"): ("rcu", 300)}, "client": 0, "machine": 0}
    d = cpusplit.diff(after, before)
    assert d["kthreads"] == 800
    assert d["kthreads:kworker"] == 500 and d["kthreads:rcu"] == 300


def test_per_request_unattributed_is_the_machine_minus_the_rest(tmp_path):
    root = str(tmp_path)
    tree(root, 1000)
    split = cpusplit.CgroupSplit(root)
    d = {"container": 10_000, "slice": 6000, "PID 1": 2000, "dbus": 500, "journald": 500, "runner": 1000,
         "runs": 3000, "manager": 0, "kthreads": 1000, "client": 1000, "machine": 20_000,
         **{f"kthreads:{k}": 0 for k in cpusplit.KTHREAD_KINDS}}
    p = cpusplit.per_request(split, d, 2)
    assert p["workers"] == 1.0  # (6000 - 1000 - 3000) µs / 2 requests, in ms
    assert p["container other"] == 0.5
    assert p["service total"] == 5.5  # the container's 10 ms and the kernel threads' 1 ms, per request
    assert p["unattributed"] == 10 - 5.5 - 0.5


def test_write_doc_replaces_its_own_block_only(tmp_path):
    run = load_run()
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nprose\n")
    run.write_doc(str(doc), "systemd", "table 1")
    run.write_doc(str(doc), "serve", "table A")
    run.write_doc(str(doc), "systemd", "table 2")
    text = doc.read_text()
    assert text.startswith("# Performance\n\nprose\n")
    assert "table 2" in text and "table 1" not in text and "table A" in text
    assert text.index("table 2") < text.index("table A")  # replaced in place
