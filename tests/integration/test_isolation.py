"""Isolation between runs and from the host: concurrent runs, later runs, the UID pool, limits seen from
inside, and what happens when the `difysandbox run` process itself is killed."""

import json
import os
import signal
import time
import uuid

import pytest

from conftest import (UID_MAX, UID_MIN, children_of, finish_snippet, pool_processes, run_cgroups,
                      start_snippet, uid_lock_free)


def clean_json(res):
    assert res['result'] == 'ok' and res['exit_code'] == 0, res.show()
    return json.loads(res['stdout'])


PEEK = '''
import json, os, time
start = time.time()
token = {token!r}
with open('/tmp/' + token, 'w') as f:
    f.write(token)
time.sleep({sleep})
found = []
for pid in range(1, 101):
    try:
        os.kill(pid, 0)
        found.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        found.append(-pid)
print(json.dumps({{'pid': os.getpid(), 'uid': os.getuid(), 'tmp': sorted(os.listdir('/tmp')), 'pids': found,
                  'start': start, 'end': time.time()}}))
'''


def test_concurrent_runs_see_nothing_of_each_other():
    tokens = ['iso-' + uuid.uuid4().hex for _ in range(2)]
    procs = [start_snippet(PEEK.format(token=t, sleep=1.0)) for t in tokens]
    results = [finish_snippet(p) for p in procs]
    seen = [clean_json(r) for r in results]
    shown = ''.join(r.show() for r in results)

    # The runs really overlapped, or this proves nothing.
    assert max(s['start'] for s in seen) < min(s['end'] for s in seen), 'the two runs did not overlap' + shown
    assert seen[0]['uid'] != seen[1]['uid'], 'two concurrent runs got the same UID' + shown
    assert results[0]['uid'] != results[1]['uid'], shown
    for s, token in zip(seen, tokens):
        assert s['tmp'] == [token], f'/tmp of a run holds {s["tmp"]}, expected only its own {token}' + shown
        assert s['pids'] == [s['pid']], f'a run sees processes {s["pids"]} besides itself ({s["pid"]})' + shown


def test_later_run_sees_nothing_of_an_earlier_one(run):
    token = 'persist-' + uuid.uuid4().hex
    first = run(f'''
import os
os.makedirs('/tmp/{token}.d')
with open('/tmp/{token}', 'w') as f:
    f.write('left behind')
print(sorted(os.listdir('/tmp')))
''')
    assert first['result'] == 'ok' and first['stdout'] == f"['{token}', '{token}.d']\n", first.show()
    second = run('import os\nprint(sorted(os.listdir("/tmp")))')
    assert second['result'] == 'ok' and second['stdout'] == '[]\n', \
        'a later run sees files in /tmp (from an earlier run?)' + second.show()
    third = run('const fs = require("fs"); console.log(JSON.stringify(fs.readdirSync("/tmp")));', 'nodejs')
    assert third['result'] == 'ok' and third['stdout'] == '[]\n', third.show()


def test_uid_pool_gives_distinct_uids_to_20_concurrent_runs():
    code = 'import os, time, json\nstart = time.time()\ntime.sleep(0.5)\n' \
           'print(json.dumps({"uid": os.getuid(), "start": start, "end": time.time()}))'
    procs = [start_snippet(code) for _ in range(20)]
    results = [finish_snippet(p) for p in procs]
    shown = ''.join(r.show() for r in results[:3])
    inner = [clean_json(r) for r in results]
    uids = [r['uid'] for r in results]
    assert [i['uid'] for i in inner] == uids, 'the UID inside differs from the reported one' + shown
    assert all(UID_MIN <= u <= UID_MAX for u in uids), f'UIDs outside the pool: {uids}'
    assert len(set(uids)) == 20, f'UIDs handed out twice among 20 concurrent runs: {sorted(uids)}'
    # At least some of them ran at the same time (on 2 cores, 20 runs of 0.5 s cannot all be serial).
    latest_start = sorted(i['start'] for i in inner)[len(inner) // 2]
    earliest_end = min(i['end'] for i in inner)
    assert latest_start < earliest_end, 'the runs did not overlap: the test proves nothing' + shown


def test_task_limit_stops_a_thread_bomb(run):
    res = run('''
import threading
threading.stack_size(256 * 1024)
ev = threading.Event()
started = 0
try:
    for i in range(1000):
        threading.Thread(target=ev.wait, args=(10,), daemon=True).start()
        started += 1
except RuntimeError as e:
    print(started, type(e).__name__)
else:
    print(started, 'no limit')
ev.set()
''')
    assert res['result'] == 'ok', res.show()
    started = int(res['stdout'].split()[0])
    assert 4 <= started <= 64, f'{started} threads started; the task limit is 64 per run' + res.show()


def test_limits_and_mount_flags_seen_from_inside(run):
    res = run('''
import os, resource, json
t, r = os.statvfs('/tmp'), os.statvfs('/')
print(json.dumps({
    'nofile': resource.getrlimit(resource.RLIMIT_NOFILE),
    'cpu': resource.getrlimit(resource.RLIMIT_CPU),
    'tmp_bytes': t.f_blocks * t.f_frsize,
    'tmp_noexec': bool(t.f_flag & os.ST_NOEXEC), 'tmp_nosuid': bool(t.f_flag & os.ST_NOSUID),
    'tmp_nodev': bool(t.f_flag & os.ST_NODEV), 'tmp_writable': not t.f_flag & os.ST_RDONLY,
    'root_readonly': bool(r.f_flag & os.ST_RDONLY), 'root_nosuid': bool(r.f_flag & os.ST_NOSUID),
    'hostname': os.uname().nodename,
}))
''')
    got = clean_json(res)
    assert got['nofile'] == [256, 256], res.show()
    assert got['cpu'][1] <= 10, 'no CPU time limit' + res.show()
    assert 60 << 20 <= got['tmp_bytes'] <= 64 << 20, res.show()
    assert got['tmp_noexec'] and got['tmp_nosuid'] and got['tmp_nodev'] and got['tmp_writable'], res.show()
    assert got['root_readonly'] and got['root_nosuid'], res.show()
    assert got['hostname'] != os.uname().nodename, 'the run sees the host name (no UTS namespace?)' + res.show()


def test_cpu_quota_limits_a_run_to_one_core(run):
    # Three worker threads spin for 2.5 s of wall time each: with the 100% CPU quota they share one core,
    # so the run's CPU time stays close to its duration (on 2 cores it would be about twice that).
    res = run("""
const { Worker } = require('worker_threads');
for (let i = 0; i < 3; i++) new Worker('const s = Date.now(); while (Date.now() - s < 2500) {}', { eval: true });
""", 'nodejs', options=('--timeout', '4'))
    assert res['result'] == 'ok', res.show()
    assert res['cpu_ms'] <= res['duration_ms'] * 1.25 + 200, 'the run used more than one core' + res.show()


SLEEPERS = {
    'python3': 'import time\nprint("started", flush=True)\ntime.sleep(30)\nprint("woke")',
    'nodejs': 'console.log("started"); setTimeout(() => console.log("woke"), 30000);',
}


def kill_runner_mid_run(language):
    """Starts a 30 s run, SIGKILLs its `difysandbox run` once the snippet is up; returns (uid, run_pid), the
    run's PID 1 as the host sees it."""
    proc = start_snippet(SLEEPERS[language], language, options=('--timeout', '60'))
    run_pid, uid, deadline = None, None, time.monotonic() + 15
    while uid is None and time.monotonic() < deadline:
        for pid in children_of(proc.pid):
            info = pool_processes().get(pid)
            if info:  # the run's PID 1, past its credentials step
                run_pid, uid = pid, info[0]
                break
        else:
            time.sleep(0.05)
    if uid is None:
        proc.kill()
        proc.communicate()
        pytest.fail('the run never showed up as a child of difysandbox run with a pool UID')
    time.sleep(0.5)  # past the interpreter's start-up, into the sleep
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    return uid, run_pid


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def processes_of(uid):
    return [d for u, d in pool_processes().values() if u == uid]


def reap_orphan(run_pid):
    """SIGKILLs, by PID, the run this test started should it have outlived its runner (its PID namespace
    goes with it), so that a failure here does not leak into later tests."""
    try:
        os.kill(run_pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    wait_for(lambda: not os.path.exists(f'/proc/{run_pid}'), 5)


@pytest.mark.parametrize('language', ['python3', 'nodejs'])
def test_sigkill_of_the_runner_ends_the_run(language):
    uid, run_pid = kill_runner_mid_run(language)
    try:
        wait_for(lambda: not processes_of(uid) and uid_lock_free(uid), 5)
        problems = []
        left = processes_of(uid)
        if left:
            problems.append(f'processes of the run remain: {left}')
        if not uid_lock_free(uid):
            problems.append(f'the lock of UID {uid} is still held')
        elif left:
            problems.append(f'the lock of UID {uid} is free while processes with that UID still run: nothing '
                            f'ends them (no runner, no timeout) until a later run happens to take UID {uid}')
        assert not problems, '5 s after SIGKILL of difysandbox run: ' + '; '.join(problems)
    finally:
        reap_orphan(run_pid)


def test_sigkill_of_the_runner_leaves_no_cgroup(run):
    """A killed runner cannot remove its run's cgroup; by design (cgroup.h) the next sandbox to start
    sweeps every run cgroup whose UID nobody holds. Its processes are gone at once (the test above);
    the empty cgroup must be gone once the next run has started."""
    uid, run_pid = kill_runner_mid_run('python3')
    try:
        def mine():
            return [p for p in run_cgroups() if os.path.basename(p) == f'run-{uid}']

        assert wait_for(lambda: not any(run_cgroups().get(p) for p in mine()), 5), \
            f'5 s after SIGKILL of difysandbox run its cgroups still hold processes: {run_cgroups()}'
        assert run('print(1)')['stdout'] == '1\n'
        assert not mine(), f'the next run did not sweep the killed run\'s cgroups: {mine()}'
    finally:
        reap_orphan(run_pid)
