"""difysandboxctl top under a real systemd: plain lines when stdout is not a terminal, and a live view in
an 80-column terminal (tmux: send-keys, capture-pane) that shows a running run's scope with its language,
sorts on s and quits on q."""

import re
import threading
import time

from conftest import request

SESSION = "difysandbox-top"


def slow_run(seconds=4):
    # CPU for a while, so that the scope is there to see, with CPU time of its own.
    code = f"import time\nt = time.time()\nwhile time.time() - t < {seconds}:\n    pass\nprint('done')"
    status, body = request("POST", "/v1/sandbox/run",
                           {"language": "python3", "code": code, "preload": "", "enable_network": False},
                           timeout=60)
    assert status == 200, body


def test_plain_lines_when_not_a_terminal(container):
    runner = threading.Thread(target=lambda: [slow_run(1) for _ in range(3)])
    runner.start()
    try:
        p = container.sh("difysandboxctl top -n 3 | cat", timeout=60)
    finally:
        runner.join(60)
    out = p.stdout
    assert "\033" not in out, repr(out)
    lines = out.splitlines()
    assert all(len(l) <= 80 for l in lines), [l for l in lines if len(l) > 80]
    assert sum(l.startswith("difysandbox top") for l in lines) == 3, out
    assert any(re.match(r"python3\s+\d", l) for l in lines) and any(re.match(r"nodejs\s+\d", l) for l in lines)
    assert "max_workers" in out and "queued" in out


def test_live_view_in_80_columns_under_tmux(container):
    container.sh(f"tmux kill-session -t {SESSION} 2>/dev/null; "
                 f"TERM=xterm tmux new-session -d -s {SESSION} -x 80 -y 24 difysandboxctl top", check=True)
    runner = threading.Thread(target=slow_run, args=(6,))
    try:
        runner.start()
        pane = ""
        deadline = time.time() + 15
        while time.time() < deadline:
            time.sleep(0.5)
            pane = container.sh(f"tmux capture-pane -p -t {SESSION}").stdout
            if re.search(r"difysandbox-run-\S+\s+python3\s+\d+\.\d\s+\d+\.\d\d", pane) and \
                    "in flight 1/" in pane:
                break
        assert re.search(r"difysandbox-run-\S+\s+python3\s+\d+\.\d\s+\d+\.\d\d", pane), pane
        assert "in flight 1/" in pane, pane
        assert all(len(l) <= 80 for l in pane.splitlines()), pane
        assert "sort cpu" in pane
        container.sh(f"tmux send-keys -t {SESSION} s")
        time.sleep(0.5)
        assert "sort memory" in container.sh(f"tmux capture-pane -p -t {SESSION}").stdout
        container.sh(f"tmux send-keys -t {SESSION} q")
        deadline = time.time() + 5
        while container.sh(f"tmux has-session -t {SESSION}", check=False).returncode == 0:
            assert time.time() < deadline, "top did not quit on q"
            time.sleep(0.2)
    finally:
        runner.join(60)
        container.sh(f"tmux kill-session -t {SESSION} 2>/dev/null", check=False)
