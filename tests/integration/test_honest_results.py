"""Honest results (issue 12 item 4): a run is answered with what happened to it. An exit that happened
before the deadline wins over a deadline its waiter noticed late (stopped, starved); a SIGKILL from
outside the run is reported as one, not as a timeout. Standalone `difysandbox serve`, with no warm pool,
so that the only interpreter of the test's UID range is the test's run."""

import os
import signal
import threading
import time

import pytest

from serve_helpers import children_of, process_status, process_uid, start_server

UID_MIN, UID_MAX = 10700, 10719
TIMEOUT = 5


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    s = start_server({'prewarm': False, 'worker_timeout': TIMEOUT, 'uid_min': UID_MIN, 'uid_max': UID_MAX,
                      'state_dir': str(tmp_path_factory.mktemp('state'))})
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def run_interpreter(server, timeout=30):
    """The run's PID 1 as the host sees it: the one descendant of serve with a UID of its pool."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [pid for pid in descendants(server.proc.pid)
                 if (process_uid(pid) or 0) in range(UID_MIN, UID_MAX + 1)
                 and process_status(pid).get('State', 'Z').split()[0] != 'Z']
        if found:
            assert len(found) == 1, f'more than one process of the run: {found}'
            return found[0]
        time.sleep(0.02)
    raise AssertionError('no run process appeared:\n' + server.log_text())


def start_run(server, code):
    box = {}
    t = threading.Thread(target=lambda: box.update(response=server.run(code)))
    t.start()
    return t, box


def answer(thread, box):
    thread.join(120)
    assert not thread.is_alive(), 'no answer'
    r = box['response']
    assert r.status_code == 200, r.text
    body = r.json()
    assert body['code'] == 0, body
    return body['data']


def gone(pid):
    return process_status(pid).get('State', 'Z').split()[0] == 'Z'


def test_exit_before_the_deadline_wins_over_a_stalled_waiter(server):
    # The run ends on its own at once; its waiter (the parent that pumps its output and reaps it) is
    # stopped until well after the deadline, then resumed: the exit happened first, so it is the answer.
    thread, box = start_run(server, "import time\ntime.sleep(1)\nprint('finished')\n")
    pid = run_interpreter(server)
    waiter = int(process_status(pid)['PPid'])
    assert waiter in descendants(server.proc.pid)
    os.kill(waiter, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 60
        while not gone(pid):
            assert time.monotonic() < deadline, 'the run did not end while its waiter was stopped'
            time.sleep(0.05)
        time.sleep(TIMEOUT + 1)  # the run's deadline is behind us for sure (it started before pid showed)
    finally:
        os.kill(waiter, signal.SIGCONT)
    data = answer(thread, box)
    assert data['stdout'] == 'finished\n' and data['error'] == '', data


def test_sigkill_from_outside_is_reported_as_such(server):
    thread, box = start_run(server, "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    pid = run_interpreter(server)
    # the process the test kills is the run's: a UID of this server's pool, below this server
    assert process_uid(pid) in range(UID_MIN, UID_MAX + 1) and pid in descendants(server.proc.pid)
    os.kill(pid, signal.SIGKILL)
    data = answer(thread, box)
    assert 'killed by signal 9' in data['error'], data
    assert 'timeout' not in data['error'] and 'memory' not in data['error'], data


def test_a_real_timeout_is_still_a_timeout(server):
    data = server.run("import time\ntime.sleep(60)\n").json()['data']
    assert 'error: timeout' in data['error'], data
