"""Neighbours (issue 12 item 2): two `difysandbox serve` instances on one host, each with its own
state_dir and UID range, in the same cgroup (both children of this test). The second one's start (and
its sweep of stale run cgroups) must leave the first one's live run alone; a third whose UID range
overlaps a live instance's is refused at start, saying why."""

import threading
import time

import pytest

from serve_helpers import Server, children_of, process_status, process_uid, start_server

A_RANGE = (14720, 14739)  # outside the default 10000-10999 of the other tests: a live neighbour
# with an overlapping range would refuse their runs (that is the point of the registry)
B_RANGE = (14740, 14759)
OVERLAP = (14735, 14744)  # overlaps both


def config(tmp_path_factory, name, uid_range, **extra):
    return {'prewarm': False, 'uid_min': uid_range[0], 'uid_max': uid_range[1],
            'state_dir': str(tmp_path_factory.mktemp(name)), **extra}


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def wait_for_run_process(server, uid_range, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in descendants(server.proc.pid):
            uid = process_uid(pid)
            if uid is not None and uid_range[0] <= uid <= uid_range[1] and \
                    process_status(pid).get('State', 'Z')[0] != 'Z':
                return pid
        time.sleep(0.02)
    raise AssertionError('the run did not start:\n' + server.log_text())


def test_a_neighbours_start_leaves_a_live_run_alone_and_an_overlap_is_refused(tmp_path_factory):
    a = start_server(config(tmp_path_factory, 'a', A_RANGE, worker_timeout=60))
    b = c = None
    try:
        box = {}
        code = "import time\ntime.sleep(8)\nprint('survived')\n"
        t = threading.Thread(target=lambda: box.update(r=a.run(code)))
        t.start()
        pid = wait_for_run_process(a, A_RANGE)

        # B starts (sweeping the stale run cgroups it can see) and runs something of its own.
        b = start_server(config(tmp_path_factory, 'b', B_RANGE))
        r = b.run("print('b')")
        assert r.json()['data']['stdout'] == 'b\n', r.text
        assert process_status(pid), "A's run was killed by B's start"

        t.join(120)
        assert not t.is_alive()
        data = box['r'].json()['data']
        assert data['stdout'] == 'survived\n' and data['error'] == '', data

        # C's range overlaps both live instances: refused at start, with the range and whose it is.
        c = Server(config(tmp_path_factory, 'c', OVERLAP))
        with pytest.raises(AssertionError, match='exited'):
            c.start()
        log = c.log_text()
        assert 'Refusing to start: UID range 14735-14744 overlaps' in log, log
        assert 'state_dir' in log, log
    finally:
        for s in (a, b, c):
            if s:
                s.stop()
                s.cleanup()


def test_an_instance_can_start_again_after_its_neighbour_stopped(tmp_path_factory):
    # The claim dies with its instance: a range freed by a stopped instance can be taken.
    a = start_server(config(tmp_path_factory, 'a', A_RANGE))
    assert a.stop() == 0
    a.cleanup()
    c = start_server(config(tmp_path_factory, 'c', OVERLAP))
    try:
        assert c.run("print(1)").json()['data']['stdout'] == '1\n'
    finally:
        c.stop()
        c.cleanup()
