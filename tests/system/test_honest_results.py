"""Honest results under systemd (issue 12 item 4): a run in a transient scope that something outside
kills is reported as killed by that signal. systemd removes the scope as soon as it is empty, so this
shows that the run's OOM counter (on this hybrid host, the v1 memory.oom_control) was read before that;
the old inference ("a SIGKILL the sandbox did not send is the OOM killer's") answered memory."""

import json
import re
import shlex

import pytest

# Three threads besides the main one: how the script tells this run's interpreter from the warm pool's
# idle Python ones (one thread each) among the processes with a pool UID; the pool's Node.js ones have
# more (libuv, V8), hence a python and exactly four.
MARKED_SLEEPER = ("import threading, time\n"
                  "for _ in range(3):\n    threading.Thread(target=time.sleep, args=(4,)).start()\n"
                  "time.sleep(4)\n")

SCRIPT = r"""
curl -s -m 60 -H 'X-Api-Key: dify-sandbox' -H 'Content-Type: application/json' -d BODY \
    http://127.0.0.1:8194/v1/sandbox/run > /tmp/kill.json &
victim=
for i in $(seq 1 200); do
  victim=$(ps -eo pid=,uid=,nlwp=,comm= | awk '$2 >= 10000 && $2 <= 10999 && $3 == 4 && $4 ~ /^python/ {print $1}' | head -1)
  [ -n "$victim" ] && break
  sleep 0.02
done
echo "victim=$victim" >&2
[ -n "$victim" ] && echo "memory=$(grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:|^0::' /proc/$victim/cgroup | head -1)" >&2
[ -n "$victim" ] && kill -9 $victim
wait
echo
cat /tmp/kill.json
"""


def test_a_kill_from_outside_a_scope_is_reported_as_such(container):
    body = shlex.quote(json.dumps({"language": "python3", "code": MARKED_SLEEPER, "preload": "",
                                   "enable_network": False}))
    p = container.sh(SCRIPT.replace("BODY", body), timeout=120)
    data = json.loads(p.stdout.strip().splitlines()[-1])["data"]
    memory = re.search(r"^memory=(.*)$", p.stderr, re.M)
    assert memory, p.stderr[-2000:]
    if not memory.group(1).endswith(".scope"):
        # The run's memory cgroup is not its scope's own (nspawn mounts the v1 hierarchies read-only, so
        # systemd in the container cannot make one): no count here is the run's, and the sandbox rightly
        # falls back to inferring. tests/vm shows the read cause on pure v2.
        pytest.skip(f"this rig gives a run's scope no memory cgroup of its own ({memory.group(1)})")
    assert "killed by signal 9" in data["error"], (data, p.stderr[-2000:])
    assert "memory" not in data["error"] and "timeout" not in data["error"], data
