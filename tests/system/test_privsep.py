"""Privilege separation under a real systemd (DESIGN §2): the socket-activated worker holds no privilege,
the runner it asks is socket-activated and restarted by systemd, a runner killed mid-run costs only the
run in flight (its client is told, with the runner named), and a reload reaches runs the warm pool
prepared before it."""

import json
import os
import socket
import sys
import threading
import time

from conftest import request, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from runner_capabilities import bounding_set_matches, runner_capability_problems  # noqa: E402
from test_manager import call, set_config


def instance_pids(container):
    """Main PIDs of the live difysandbox@ instances (one per open connection)."""
    out = container.sh("systemctl list-units --no-legend --plain 'difysandbox@*.service'").stdout
    pids = []
    for unit in (line.split()[0] for line in out.splitlines() if line.strip()):
        pid = container.sh(f"systemctl show -P MainPID {unit}", check=False).stdout.strip()
        if pid.isdigit() and pid != "0":
            pids.append(pid)
    return pids


def test_socket_activated_worker_holds_no_privilege(container):
    s = socket.create_connection(("127.0.0.1", 8194), timeout=30)
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"200 OK" in s.recv(4096)
        pids = instance_pids(container)
        assert pids, "no live difysandbox@ instance for an open connection"
        for pid in pids:
            status = dict(line.split(":", 1) for line in
                          container.sh(f"cat /proc/{pid}/status").stdout.splitlines() if ":" in line)
            assert all(int(u) != 0 for u in status["Uid"].split()), (pid, status["Uid"])
            assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0, (pid, status)
            assert int(status["CapBnd"], 16) == 0, (pid, status["CapBnd"])
            assert status["NoNewPrivs"].strip() == "1", (pid, status["NoNewPrivs"])
            assert status["Seccomp"].strip() == "2", (pid, status["Seccomp"])
    finally:
        s.close()


def test_worker_filters_its_own_system_calls_not_systemd(container):
    """systemd compiles SystemCallFilter= anew for every instance (4-5 ms of each new connection): the
    unit has none, and the worker loads its own filter (worker-filter.c, tested in test-worker-filter)
    before it reads its connection. A worker without it would not serve: the answer proves it loaded."""
    # systemd shows an empty filter as "~" (a deny list of nothing)
    assert container.sh("systemctl show -P SystemCallFilter difysandbox@x.service").stdout.strip() in ("", "~")
    code, _ = request("GET", "/health", key=None)
    assert code == 200
    log = container.journal("-u", "difysandbox@*", "-o", "cat")
    assert "Cannot load the worker's system call filter" not in log, log[-2000:]


def test_runner_is_socket_activated_and_root(container):
    props = container.sh("systemctl show difysandbox-runner.service -p ActiveState -p Type -p Restart "
                         "-p MainPID").stdout
    values = dict(line.split("=", 1) for line in props.splitlines() if "=" in line)
    assert values["ActiveState"] == "active" and values["Type"] == "notify", values
    assert values["Restart"] == "always", values
    uid = container.sh(f"awk '/^Uid:/ {{print $2}}' /proc/{values['MainPID']}/status").stdout.strip()
    assert uid == "0", uid
    sock = container.sh("stat -c '%a %U %G' /run/difysandbox/runner.sock").stdout.split()
    assert sock == ["660", "root", "difysandbox-worker"], sock


def test_live_runner_holds_the_capabilities_of_its_unit(container):
    bounding = container.sh("systemctl show -P CapabilityBoundingSet difysandbox-runner.service").stdout
    assert bounding_set_matches(bounding), bounding
    run("print(1)")  # the runner is started by its socket: a run makes sure it is up
    pid = container.sh("systemctl show -P MainPID difysandbox-runner.service").stdout.strip()
    problems = runner_capability_problems(container.sh(f"cat /proc/{pid}/status").stdout)
    assert not problems, problems


def test_runner_killed_mid_run_is_answered_and_restarted(container):
    old = container.sh("systemctl show -P MainPID difysandbox-runner.service").stdout.strip()
    box = {}

    def slow():
        box["r"] = request("POST", "/v1/sandbox/run", {"language": "python3", "code": "import time\n"
                           "time.sleep(5)", "preload": "", "enable_network": True}, timeout=60)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(2)  # the run sleeps 5 s: it is under way
    container.sh(f"kill -KILL {old}")
    t.join(60)
    status, body = box["r"]
    envelope = json.loads(body)
    assert status == 200 and envelope["code"] == -500 and "runner" in envelope["message"], envelope
    # systemd starts a new runner (Restart=always); the next request is served by it.
    deadline = time.time() + 30
    new = old
    while time.time() < deadline:
        new = container.sh("systemctl show -P MainPID difysandbox-runner.service").stdout.strip()
        if new not in ("0", old):
            break
        time.sleep(0.2)
    assert new not in ("0", old), "systemd did not restart difysandbox-runner.service"
    assert run("print('after')")["stdout"] == "after\n"
    # Nothing of the killed runner's runs is left: processes with a pool UID are the new pool's only,
    # one in each run scope.
    time.sleep(2)
    scopes = container.sh("systemctl list-units --no-legend --plain 'difysandbox-run-*.scope'").stdout
    n_scopes = len([line for line in scopes.splitlines() if line.strip()])
    pool_uid = int(container.sh("ps -eo uid= | awk '$1 >= 10000 && $1 <= 10999' | wc -l").stdout)
    assert pool_uid == n_scopes <= 3, (pool_uid, scopes)


def test_reload_reaches_runs_the_pool_prepared_before_it(container):
    code = "import resource\nprint(resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    assert run(code)["stdout"] == "256\n"
    time.sleep(2)  # the pool has prepared its runs with the old configuration
    set_config(container, "open_files_max: 100\n")
    call(container, "ReloadConfig")
    try:
        assert run(code)["stdout"] == "100\n"
    finally:
        set_config(container, "")
        call(container, "ReloadConfig")
    assert run(code)["stdout"] == "256\n"
