"""Admission across worker processes (DESIGN §3 step 1) through a real `difysandbox serve` with
max_workers 1 and max_requests 3: runs queue in arrival order, the request beyond max_requests gets 503
at once, and a worker killed with SIGKILL in the middle of a run leaks no slot.

The limits go in a --config file and in the MAX_WORKERS / MAX_REQUESTS environment overrides; a build
that applies neither makes these tests xfail with that reason (the server's "Serving on" line says what
it applies). State stays in /run/difysandbox, shared with every other difysandbox of the host, as in
production: the UID pool must be shared for runs to be safe.
"""

import fcntl
import os
import signal
import threading
import time

import pytest
import requests

from serve_helpers import (HEADERS, CodeExecutionError, children_of, dify_execute_code, require_config,
                           start_server)

ADMISSION = '/run/difysandbox/admission'
SLEEP = 1.0


@pytest.fixture(scope='module')
def small():
    # Without prewarm: a child of the runner has a run only while it serves a request, which is how the
    # SIGKILL test finds its victim (a pool slot's prepared run would look the same).
    limits = {'max_workers': 1, 'max_requests': 3, 'prewarm': False}
    s = start_server(limits, env={'MAX_WORKERS': '1', 'MAX_REQUESTS': '3'})
    yield s
    s.stop()
    s.cleanup()


@pytest.fixture
def limited(small):
    require_config(small, max_workers='1', max_requests='3')
    return small


def sleeper(tag, seconds=SLEEP):
    return f'import time\ntime.sleep({seconds})\nprint("{tag}")'


def post_in_thread(server, code, results, key):
    def go():
        start = time.monotonic()
        try:
            r = requests.post(server.url + '/v1/sandbox/run', headers=HEADERS, timeout=60,
                              json={'language': 'python3', 'code': code})
            results[key] = (r.status_code, r.json(), start, time.monotonic())
        except requests.RequestException as e:
            results[key] = (None, repr(e), start, time.monotonic())

    t = threading.Thread(target=go)
    t.start()
    return t


def held_slots(kind, n):
    """Slot files of kind (requests, workers) that someone holds now."""
    held = []
    for i in range(n):
        try:
            fd = os.open(f'{ADMISSION}/{kind}/{i}', os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(i)
        finally:
            os.close(fd)
    return held


def wait_until(predicate, timeout=10, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def test_queue_in_arrival_order_and_overload(limited):
    results, threads = {}, []
    for tag in 'ABC':
        threads.append(post_in_thread(limited, sleeper(tag), results, tag))
        time.sleep(0.3)  # A runs, then B queues, then C queues behind B
    assert wait_until(lambda: len(held_slots('requests', 3)) == 3), held_slots('requests', 3)

    # A fourth while three are in flight: refused at once, not queued.
    start = time.monotonic()
    r = requests.post(limited.url + '/v1/sandbox/run', headers=HEADERS,
                      json={'language': 'python3', 'code': 'print("D")'})
    assert time.monotonic() - start < 2
    assert r.status_code == 503
    assert r.json() == {'code': -503, 'message': 'Too many requests', 'data': None}
    # ...which Dify reports as the service being unavailable.
    with pytest.raises(CodeExecutionError, match='Code execution service is unavailable'):
        dify_execute_code(limited.url, 'python3', '', 'print("E")')

    for t in threads:
        t.join(timeout=60)
    for tag in 'ABC':
        status, body, _, _ = results[tag]
        assert status == 200 and body['data']['stdout'] == f'{tag}\n', (tag, results[tag])
    ends = {tag: results[tag][3] for tag in 'ABC'}
    assert ends['A'] < ends['B'] < ends['C'], ends
    # One at a time: each started only when the one before had finished.
    assert ends['C'] - results['A'][2] >= 3 * SLEEP, ends
    assert wait_until(lambda: held_slots('requests', 3) == [] and held_slots('workers', 1) == [])


def run_children(pid):
    return children_of(pid)


def test_sigkilled_handler_leaks_no_slot(limited):
    """The runner's handler holds the request's admission slots: killed mid-run, it leaks none, and its
    client is told, with the runner named, instead of waiting."""
    results = {}
    t = post_in_thread(limited, sleeper('victim', 4), results, 'victim')
    victim = None

    def find():
        nonlocal victim
        for pid in limited.handlers():
            if run_children(pid):
                victim = pid
                return True
        return False

    assert wait_until(find), 'no handler of the runner with a running run appeared'
    assert held_slots('requests', 3) and held_slots('workers', 1) == [0]
    os.kill(victim, signal.SIGKILL)  # our own grandchild, with a pool UID's run below it
    t.join(timeout=30)
    status, body, _, _ = results['victim']
    assert status == 200 and body['code'] == -500, results
    assert 'runner' in body['message'], body
    assert wait_until(lambda: victim not in limited.handlers()), 'the runner did not reap the killed handler'

    # Nothing leaked: max_requests requests can be in flight again (all three admitted and run), and the
    # limit still holds (a fourth is refused).
    assert wait_until(lambda: held_slots('requests', 3) == [] and held_slots('workers', 1) == [])
    results.clear()
    threads = []
    for tag in 'XYZ':
        threads.append(post_in_thread(limited, sleeper(tag, 1.5), results, tag))
        time.sleep(0.2)
    assert wait_until(lambda: len(held_slots('requests', 3)) == 3)
    r = requests.post(limited.url + '/v1/sandbox/run', headers=HEADERS,
                      json={'language': 'python3', 'code': 'print(1)'})
    assert r.status_code == 503
    for t in threads:
        t.join(timeout=60)
    assert [results[tag][0] for tag in 'XYZ'] == [200, 200, 200], results
    assert limited.healthy()


def test_cli_run_takes_the_runners_admission():
    """`difysandbox run` takes the runner's path without its pool (handler_execute()): admission included.
    With max_requests 1, a second run while the first holds the one request slot is refused at once, with
    the limits named, and runs nothing."""
    from conftest import command, sandbox_env
    import subprocess
    env = dict(sandbox_env(), MAX_REQUESTS='1', MAX_WORKERS='1')
    first = subprocess.Popen(command('python3'), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, text=True)
    try:
        first.stdin.write('import time\nprint("first", flush=True)\ntime.sleep(4)\n')
        first.stdin.close()
        # The first holds its slot once its interpreter runs: wait for its slot file to be locked.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not held_admission_slots():
            time.sleep(0.05)
        assert held_admission_slots(), 'the first run never took an admission slot'
        second = subprocess.run(command('python3'), input='print("second")', capture_output=True, text=True,
                                env=env, timeout=60)
        assert second.returncode != 0, second
        assert 'second' not in second.stdout, second
        assert 'max_requests=1' in second.stderr and 'Refused' in second.stderr, second.stderr
    finally:
        first.wait(timeout=60)
        out, err = first.stdout.read(), first.stderr.read()
    assert first.returncode == 0 and '"first\\n"' in out, (out, err)


def held_admission_slots():
    """Admission files some process holds an flock() on, from /proc/locks (probing with a lock of our own
    could take a slot from under the run being watched)."""
    inodes = {}
    for root, _dirs, files in os.walk(ADMISSION):
        for name in files:
            path = os.path.join(root, name)
            try:
                inodes[os.stat(path).st_ino] = path
            except OSError:
                continue
    held = []
    with open('/proc/locks') as f:
        for line in f:
            fields = line.split()
            if len(fields) > 5 and fields[1] == 'FLOCK':
                inode = int(fields[5].split(':')[2])
                if inode in inodes:
                    held.append(inodes[inode])
    return held
