"""Privilege separation and the warm pool (DESIGN §2) through a real `difysandbox serve`: the workers that
speak HTTP hold no privilege, the runner's pool of prepared runs is bounded whatever clients do, a pooled
run is used once, preloads its modules and starts its deadline with the request, and a runner killed
mid-run costs only the runs in flight, each answered with an error that names the runner.
"""

import os
import signal
import socket
import threading
import time

import pytest
import requests

from conftest import held_uid_locks
from serve_helpers import HEADERS, children_of, process_status, process_uid, start_server

UID_MIN, UID_MAX = 10000, 10999
POOL_ENV = {
    'DIFYSANDBOX_POOL_SIZE_PYTHON3': '1',
    'DIFYSANDBOX_POOL_SIZE_NODEJS': '1',
    'WORKER_TIMEOUT': '10',
}
POOL_TOTAL = 2


@pytest.fixture(scope='module')
def pooled():
    s = start_server(env=POOL_ENV)
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def wait_until(predicate, timeout=30, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def prepared_runs(server):
    """{pid: uid} of the runs the pool holds ready: children of the runner's slots, with a pool UID. A
    handler's run looks the same; the tests look while nothing runs."""
    found = {}
    for slot in server.handlers():
        for pid in children_of(slot):
            uid = process_uid(pid)
            if uid is not None and UID_MIN <= uid <= UID_MAX:
                found[pid] = uid
    return found


def pool_full(server):
    runs = prepared_runs(server)
    return runs if len(runs) == POOL_TOTAL else None


def _waits_for_code(pid):
    """The prepared interpreter is blocked in read(3, ...): its code's pipe (python3.c's bootstrap)."""
    try:
        fields = open(f'/proc/{pid}/syscall').read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == '0' and int(fields[1], 16) == 3


def _is_python(pid):
    try:
        return b'python' in open(f'/proc/{pid}/cmdline', 'rb').read()
    except OSError:
        return False


def pool_waiting(server):
    """The pool is full and every run waits for its code, light or preloaded."""
    runs = pool_full(server)
    if not runs or not all(_waits_for_code(pid) for pid in runs):
        return None
    return runs


def pool_ready(server):
    """The pool is full, every run waits for its code, and the python ones have imported pandas (a light
    run, prepared while requests kept coming, has not, and is replaced once they pause, while code uses
    the preloads: runner.c)."""
    runs = pool_waiting(server)
    if not runs:
        return None
    python = []
    for pid in runs:
        try:
            cmdline = open(f'/proc/{pid}/cmdline', 'rb').read()
            maps = open(f'/proc/{pid}/maps').read()
        except OSError:
            return None  # replaced while we looked: the pool is still changing
        if b'python' in cmdline:
            if 'pandas' not in maps:
                return None
            python.append(pid)
    return runs if python else None  # a pool of this fixture holds python runs: none yet is not ready


def run(server, code, language='python3', session=None, timeout=60):
    # enable_network, as Dify always sends it: the pool holds that kind of run (network is on by default).
    body = {'language': language, 'code': code, 'preload': '', 'enable_network': True}
    r = (session or requests).post(server.url + '/v1/sandbox/run', json=body, headers=HEADERS, timeout=timeout)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


def test_workers_hold_no_privilege(pooled):
    with requests.Session() as s:
        assert s.get(pooled.url + '/health').status_code == 200  # a live worker for this connection
        workers = wait_until(pooled.workers, timeout=10)
        assert workers, 'serve has no worker for a live connection'
        for pid in workers:
            status = process_status(pid)
            uids = [int(u) for u in status['Uid'].split()]
            assert all(u != 0 for u in uids), (pid, status['Uid'])
            assert all(int(g) != 0 for g in status['Gid'].split()), (pid, status['Gid'])
            assert int(status['CapEff'], 16) == 0 and int(status['CapPrm'], 16) == 0, (pid, status)
            assert status['NoNewPrivs'] == '1', (pid, status)
            # Its own system call filter (src/worker/worker-filter.c), loaded before it read the request.
            assert status['Seccomp'] == '2', (pid, status['Seccomp'])
        # ...while the runner, which makes the sandboxes, is root.
        assert process_uid(pooled.runner()) == 0


def _open_files(pid):
    """{fd: what it is} of a live process: a path, or socket:[inode], pipe:[inode], anon_inode:..."""
    out = {}
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            out[int(fd)] = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            pass  # closed while we looked
    return out


def test_workers_hold_nothing_of_serves(pooled):
    """A worker keeps its connection, its line to the runner and serve's stdio (its log), and nothing else: not
    serve's listening socket, signalfd or hand-off socket, and not the root-owned instance registry entry
    (/run/difysandbox/instances/...), which serve holds open for writing and locked."""
    with requests.Session() as s:
        assert s.get(pooled.url + '/health').status_code == 200
        workers = wait_until(pooled.workers, timeout=10)
        assert workers
        serve_files = _open_files(pooled.proc.pid)
        assert any('/run/difysandbox/instances/' in f for f in serve_files.values()), serve_files
        for pid in workers:
            files = _open_files(pid)
            # Only the worker user's own directory of live connections (src/worker/connslot.c).
            assert not [f for f in files.values() if f.startswith('/run/difysandbox')
                        and not f.startswith('/run/difysandbox/connections')], (pid, files)
            assert not [f for f in files.values() if 'signalfd' in f], (pid, files)
            # Its sockets are the client's connection (libmicrohttpd's fd and the lingering close's copy)
            # and its line to the runner: none is one that serve holds (listener, hand-off).
            serve_sockets = {f for f in serve_files.values() if f.startswith('socket:')}
            worker_sockets = {f for f in files.values() if f.startswith('socket:')}
            assert not serve_sockets & worker_sockets, (pid, files, serve_files)


def test_pool_fills_to_its_size_and_its_runs_preload(pooled):
    runs = wait_until(lambda: pool_ready(pooled), timeout=60)
    assert runs, f'the pool never held {POOL_TOTAL} prepared, preloaded runs: {prepared_runs(pooled)}'
    python = {pid: uid for pid, uid in runs.items() if _is_python(pid)}
    assert len(python) == 1, runs
    body = run(pooled, 'import os, sys\nprint("pandas" in sys.modules, "DIFYSANDBOX_PRELOAD" in os.environ, '
                       'os.getuid())')
    assert body['code'] == 0, body
    preloaded, variable_seen, uid = body['data']['stdout'].split()
    # It was the pool's run (its UID), pandas was imported before the code came, and the variable that
    # told it so is gone from the code's environment.
    assert int(uid) == list(python.values())[0], (body, python)
    assert (preloaded, variable_seen) == ('True', 'False'), body


EXIT_SEMANTICS = (
    'import atexit, os, sys, threading, time\n'
    'class Noisy:\n'
    '    def __del__(self):\n'
    '        print("finalizer", flush=True)\n'
    'keep = Noisy()\n'
    'atexit.register(lambda: print("atexit", flush=True))\n'
    'threading.Thread(target=lambda: (time.sleep(0.2), print("thread", flush=True))).start()\n'
    'print("pandas" in sys.modules, os.getuid())\n'
)


def test_pooled_python_exits_as_a_script_does(pooled):
    """A preloaded interpreter leaves without tearing down its preloads (python3.c's fast exit), yet what
    a script expects of its exit still happens, in order: threads joined, the code's atexit handlers, the
    finalizers of its objects. sys.exit() and an exception keep their status."""
    python_uids = lambda: {uid for pid, uid in (pool_ready(pooled) or {}).items() if _is_python(pid)}
    uids = wait_until(python_uids, timeout=60)
    assert uids, 'the pool never held a python run'
    body = run(pooled, EXIT_SEMANTICS)
    assert body['code'] == 0 and body['data']['exit_code'] == 0, body
    first, *rest = body['data']['stdout'].splitlines()
    assert first.split()[0] == 'True' and int(first.split()[1]) in uids, (body, uids)  # the pool's, preloaded
    assert rest == ['thread', 'atexit', 'finalizer'], body
    assert wait_until(python_uids, timeout=60), 'the pool did not refill'
    body = run(pooled, 'import sys\nprint("bye")\nsys.exit(3)')
    assert (body['data']['stdout'], body['data']['exit_code']) == ('bye\n', 3), body
    assert wait_until(python_uids, timeout=60), 'the pool did not refill'
    body = run(pooled, 'print("before")\nraise ValueError("boom")')
    assert body['data']['stdout'] == 'before\n' and 'ValueError: boom' in body['data']['error'], body


def test_after_a_burst_the_pool_returns_to_preloaded_runs(pooled):
    """Requests back to back get light runs (runner.c: no preload imports while runs are coming); once they
    pause, the pool holds preloaded runs again, and the next code node that imports pandas finds it. The
    first run imports pandas: the pool preloads only while code uses the preloads (runner.c)."""
    body = run(pooled, 'import pandas\nprint("uses pandas")')
    assert body['data']['stdout'] == 'uses pandas\n', body
    with requests.Session() as session:
        for i in range(8):
            body = run(pooled, f'print({i})', session=session)
            assert body['data']['stdout'] == f'{i}\n', body
    runs = wait_until(lambda: pool_ready(pooled), timeout=60)
    assert runs, f'the pool did not return to preloaded runs: {prepared_runs(pooled)}'
    uids = {uid for pid, uid in runs.items() if _is_python(pid)}
    body = run(pooled, 'import os, sys\nprint("pandas" in sys.modules, os.getuid())')
    preloaded, uid = body['data']['stdout'].split()
    assert preloaded == 'True' and int(uid) in uids, (body, uids)


def test_prepared_run_is_used_once_and_one_that_died_is_replaced(pooled):
    runs = wait_until(lambda: pool_full(pooled))
    assert runs, f'the pool never filled: {prepared_runs(pooled)}'
    victim = next(pid for pid in runs if b'node' in open(f'/proc/{pid}/cmdline', 'rb').read())
    os.kill(victim, signal.SIGKILL)  # a grandchild of our serve, with a pool UID
    # The pool replaces it (a request that raced with the kill would get an error for a run killed from
    # outside, which is the truth, so the test does not race).
    refilled = wait_until(lambda: (lambda runs: runs if runs and victim not in runs else None)(pool_full(pooled)))
    assert refilled, (victim, prepared_runs(pooled))
    body = run(pooled, 'console.log(6 * 7)', 'nodejs')
    assert body['code'] == 0 and body['data']['stdout'] == '42\n', body
    # A run that was used is gone: two runs in a row get two UIDs.
    uids = [run(pooled, 'console.log(process.getuid())', 'nodejs')['data']['stdout'] for _ in range(2)]
    assert uids[0] != uids[1], uids


def test_deadline_counts_from_the_request(pooled):
    assert wait_until(lambda: pool_full(pooled)), 'the pool never filled'
    time.sleep(11)  # longer than worker_timeout (10 s): the prepared runs have waited that long already
    body = run(pooled, 'import time\ntime.sleep(2)\nprint("in time")')
    assert body['code'] == 0 and body['data']['stdout'] == 'in time\n', body
    assert body['data']['error'] == '', body


def _connect_idle(source, port):
    s = socket.create_connection(('127.0.0.1', port), timeout=10, source_address=(source, 0))
    s.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
    assert b'200 OK' in s.recv(4096)
    return s


# 90: most of serve's 128 workers, below the 96 from which new connections make idle unauthenticated ones
# close (src/worker/connslot.c), so that every one of them still holds its worker when counted.
@pytest.mark.parametrize('idle', [10, 90])
def test_idle_keep_alive_connections_hold_no_prepared_runs(pooled, idle):
    """An idle keep-alive connection (kept alive with /health, which needs no key) holds a worker, never a
    sandbox: the pool stays at its size, UIDs are not used up, and a new client's run succeeds."""
    assert wait_until(lambda: pool_full(pooled)), 'the pool never filled'
    conns = []
    try:
        for i in range(idle):
            conns.append(_connect_idle(f'127.0.0.{2 + i % 10}', pooled.port))  # spread over 10 peers
        time.sleep(1)
        assert len(pooled.workers()) >= idle
        assert len(prepared_runs(pooled)) <= POOL_TOTAL, prepared_runs(pooled)
        assert len(held_uid_locks()) <= POOL_TOTAL + 1, held_uid_locks()
        body = run(pooled, 'print("still served")')
        assert body['code'] == 0 and body['data']['stdout'] == 'still served\n', body
    finally:
        for c in conns:
            c.close()


def test_runner_killed_mid_run_answers_the_client_and_recovers(pooled):
    assert wait_until(lambda: pool_full(pooled)), 'the pool never filled'
    runner = pooled.runner()
    results = {}

    def slow():
        try:
            results['r'] = requests.post(pooled.url + '/v1/sandbox/run', headers=HEADERS, timeout=60,
                                         json={'language': 'python3', 'code': 'import time\ntime.sleep(2)'})
        except requests.RequestException as e:
            results['e'] = e

    t = threading.Thread(target=slow)
    t.start()
    # Wait until its handler runs it (a runner child whose run is not among the prepared ones).
    assert wait_until(lambda: len(pooled.handlers()) > POOL_TOTAL, timeout=10), 'the run never started'
    os.kill(runner, signal.SIGKILL)  # serve's own child
    t.join(60)
    assert 'r' in results, results
    body = results['r'].json()
    assert body['code'] == -500 and 'runner' in body['message'], body
    # serve starts a new runner; a new connection's run works, and nothing of the old one stays.
    new = wait_until(lambda: [p for p in pooled.children() if process_uid(p) == 0 and p != runner], timeout=10)
    assert new, 'serve did not start a new runner'
    body = run(pooled, 'print("after")')
    assert body['code'] == 0 and body['data']['stdout'] == 'after\n', body
    assert wait_until(lambda: len(held_uid_locks()) <= POOL_TOTAL, timeout=20), held_uid_locks()
    orphans = [pid for pid in map(int, filter(str.isdigit, os.listdir('/proc')))
               if UID_MIN <= (process_uid(pid) or 0) <= UID_MAX and pid not in prepared_runs(pooled)]
    assert wait_until(lambda: not [p for p in orphans if process_uid(p) is not None], timeout=20), orphans


def test_workers_have_a_memory_limit(pooled):
    """A worker's memory is outside every run's cgroup: serve bounds what it may allocate (RLIMIT_DATA), as
    MemoryMax= of difysandbox@.service does under systemd (issue 24, item 5)."""
    with requests.Session() as s:
        assert s.get(pooled.url + '/health').status_code == 200
        workers = wait_until(pooled.workers, timeout=10)
        assert workers
        for pid in workers:
            with open(f'/proc/{pid}/limits') as f:
                line = next(line for line in f if line.startswith('Max data size'))
            soft = line.split()[3]
            assert soft != 'unlimited', (pid, line)
            # at least 256 MiB, and twice the measured peak of the defaults' code_max and output_max at most
            assert 256 << 20 <= int(soft) <= 1 << 30, (pid, line)


def _cpu_seconds(pid):
    """utime + stime of a live process, in seconds."""
    fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def test_an_idle_runner_takes_no_cpu(pooled):
    """Once runs pause and its pool is ready, the runner waits: a timer that fires at once, again and again
    (a deadline in the past re-armed), would burn a CPU and starve the pool's own idle-time work. The run
    imports pandas, so that the pool preloads again (runner.c: only for code that uses the preloads)."""
    run(pooled, 'import pandas\nprint(1)')
    assert wait_until(lambda: pool_ready(pooled), timeout=60), 'the pool did not return to preloaded runs'
    runner = pooled.runner()
    before = _cpu_seconds(runner)
    time.sleep(3)
    used = _cpu_seconds(runner) - before
    assert used < 0.5, f'the idle runner used {used:.2f} s of CPU in 3 s'
