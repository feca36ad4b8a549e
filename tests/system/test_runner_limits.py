"""Issue 24, item 3, under a real systemd: the live runner's descriptor limit is its unit's LimitNOFILE=, and
a process of the worker user that opens many connections to /run/difysandbox/runner.sock keeps only a few,
while the other workers (difysandbox@.service instances) are still served by the same runner."""

import os
import re

from conftest import run

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PER_PEER_MAX = 4  # src/runner/runner.c's CONNECTIONS_PER_PEER_MAX

# Run inside the container as difysandbox-worker: opens up to 200 connections to the runner (bounded),
# checks after a second how many the runner still holds, and while holding them asks for a run over HTTP,
# which a socket-activated worker (another process) takes to the runner.
HOLDER = r'''
import json, select, socket, sys, time, urllib.request
held = []
for _ in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(2)
    try:
        s.connect("/run/difysandbox/runner.sock")
    except OSError:
        s.close()
        break
    held.append(s)
time.sleep(1)
def alive(s):
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return True
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
n_alive = sum(alive(s) for s in held)
body = json.dumps({"language": "python3", "code": "print(6 * 7)", "preload": "", "enable_network": True})
req = urllib.request.Request("http://127.0.0.1:8194/v1/sandbox/run", data=body.encode(), method="POST",
                             headers={"X-Api-Key": sys.argv[1], "Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as resp:
    answer = json.loads(resp.read())
print(json.dumps({"opened": len(held), "alive": n_alive, "answer": answer}))
'''


def unit_limit_nofile():
    with open(os.path.join(TOP, "units", "difysandbox-runner.service.in")) as f:
        m = re.search(r"^LimitNOFILE=(\d+)$", f.read(), re.M)
    assert m, "units/difysandbox-runner.service.in sets no LimitNOFILE="
    return int(m.group(1))


def runner_pid(container):
    run("print(1)")  # the runner is started by its socket: a run makes sure it is up
    return container.sh("systemctl show -P MainPID difysandbox-runner.service").stdout.strip()


def open_files(container, pid):
    """(soft, hard) RLIMIT_NOFILE of a process in the container."""
    limits = container.sh(f"cat /proc/{pid}/limits").stdout
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    return tuple(int(x) for x in line.split()[3:5])


def test_live_runner_has_the_descriptor_limit_of_its_unit(container):
    want = unit_limit_nofile()
    assert container.sh("systemctl show -P LimitNOFILE difysandbox-runner.service").stdout.strip() == str(want)
    # A container without CAP_SYS_RESOURCE cannot go past its own hard limit: systemd then sets the
    # closest it can (setrlimit_closest()), which is PID 1's.
    ceiling = open_files(container, 1)[1]
    assert open_files(container, runner_pid(container)) == (min(want, ceiling),) * 2


def test_one_worker_process_cannot_fill_the_runner(container):
    import json
    from conftest import KEY
    before = runner_pid(container)
    container.sh(f"cat > /tmp/holder.py <<'EOF'\n{HOLDER}\nEOF")
    out = container.sh("setpriv --reuid difysandbox-worker --regid difysandbox-worker --clear-groups "
                       f"--inh-caps=-all /usr/bin/python3 /tmp/holder.py {KEY}", timeout=120).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["opened"] > PER_PEER_MAX, result
    assert result["alive"] <= PER_PEER_MAX, result
    assert result["answer"]["code"] == 0 and result["answer"]["data"]["stdout"] == "42\n", result
    assert runner_pid(container) == before  # the same runner served it, and is still there
    journal = container.journal("-u", "difysandbox-runner.service", "-o", "cat")
    assert journal.count("Refusing more connections to the runner from PID") <= 1, journal[-3000:]
