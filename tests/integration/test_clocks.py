"""Issue 24 items 7 and 8: what a run's clocks say, through a real `difysandbox serve` with its warm pool.

A prepared run is made before its request, and its time namespace's offsets are frozen once it is in it.
Its clocks counted from its making, so after the pool sat idle for 8 s a warm run read CLOCK_BOOTTIME and
CLOCK_MONOTONIC at about 8.4 s, and Node's process.uptime() too: when another tenant was last served.
Now each run's clocks start at a random number of seconds below 2^24 (src/sandbox/clocks.h), Node's
process.uptime() and performance.now() count from the code's arrival (src/runtime/nodejs.c), and a
prepared run is replaced at a random age of at most DIFYSANDBOX_POOL_MAX_AGE_SEC (src/runner/slot.c).

Without CAP_SYS_TIME (a host in a container), every run failed at step 'clocks'; runs now go on without a
time namespace, and the runner says so once.
"""

import json
import subprocess
import time

import pytest

from serve_helpers import Server, start_server
from test_privsep import POOL_ENV, pool_full, pool_waiting, prepared_runs, run, wait_until

IDLE_S = 6
# A random start lands in a window of W seconds with probability W / 2^24 (6e-8 per second of window).
START_SPAN_S = 2 ** 24


@pytest.fixture(scope='module')
def pooled():
    s = start_server(env=POOL_ENV)
    s.started = time.monotonic()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def warm_run(server, code, language):
    """Runs code on the prepared run of language the pool holds; returns its output, parsed as JSON. The
    run prints its UID: the prepared run's is the proof that it was the warm one. Light or preloaded: the
    pool preloads only while code uses the preloads, and these runs' code does not."""
    runs = wait_until(lambda: pool_waiting(server), timeout=90)
    assert runs, f'the pool never held its prepared runs: {prepared_runs(server)}'
    ready_at = time.monotonic()
    time.sleep(IDLE_S)
    body = run(server, code, language)
    assert body['code'] == 0 and body['data']['error'] == '', body
    got = json.loads(body['data']['stdout'])
    assert got['uid'] in runs.values(), f'not a prepared run: UID {got["uid"]}, pool {runs}'
    # The prepared run is at least IDLE_S old (it was ready before the pause) and at most as old as serve.
    got['age_min'], got['age_max'] = time.monotonic() - ready_at - 1, time.monotonic() - server.started + 1
    return got


def test_a_warm_python_runs_clocks_do_not_tell_its_age(pooled):
    got = warm_run(pooled, '''
import json, os, time
print(json.dumps({'uid': os.getuid(), 'boottime': time.clock_gettime(time.CLOCK_BOOTTIME),
                  'monotonic': time.monotonic(), 'perf_counter': time.perf_counter()}))
''', 'python3')
    for clock in ('boottime', 'monotonic', 'perf_counter'):
        # Before: the prepared run's age, within [age_min, age_max]. Now: a random start plus that age,
        # outside the window but for a chance of (age_max - age_min) / 2^24.
        assert not got['age_min'] <= got[clock] <= got['age_max'], (clock, got)
        assert 0 <= got[clock] < START_SPAN_S + got['age_max'], (clock, got)


def test_a_warm_node_runs_uptime_counts_from_its_code(pooled):
    got = warm_run(pooled, '''
console.log(JSON.stringify({ uid: process.getuid(), uptime: process.uptime(), now: performance.now(),
                             origin: Date.now() - performance.timeOrigin,
                             hrtime: Number(process.hrtime.bigint()) / 1e9, os: require('os').uptime() }));
''', 'nodejs')
    # From the code's arrival: well under a second when the code starts, though the run waited IDLE_S.
    assert 0 <= got['uptime'] < 1, got
    assert 0 <= got['now'] < 1000 and 0 <= got['origin'] < 1000, got
    # The clocks themselves, as for Python.
    for clock in ('hrtime', 'os'):
        assert not got['age_min'] <= got[clock] <= got['age_max'], (clock, got)


def test_an_old_prepared_run_is_replaced():
    """A prepared run older than DIFYSANDBOX_POOL_MAX_AGE_SEC (here 4 s; its age is random between half
    that and that) is replaced without any request, and the pool still serves."""
    s = start_server(env={**POOL_ENV, 'DIFYSANDBOX_POOL_MAX_AGE_SEC': '4'})
    try:
        first = wait_until(lambda: pool_full(s), timeout=90)
        assert first, f'the pool never filled: {prepared_runs(s)}'
        replaced = wait_until(lambda: (lambda now: now if now and not set(now) & set(first) else None)(
            pool_full(s)), timeout=60, step=0.2)
        assert replaced, f'prepared runs {first} still there or not replaced: {prepared_runs(s)}'
        body = run(s, 'print(6 * 7)')
        assert body['code'] == 0 and body['data']['stdout'] == '42\n', body
    finally:
        rc = s.stop()
        s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def test_without_cap_sys_time_runs_work_and_the_runner_warns_once():
    s = Server(env=POOL_ENV)
    s.args = ['setpriv', '--bounding-set', '-sys_time', '--inh-caps', '-all', '--'] + s.args
    try:
        s.start()
        assert wait_until(lambda: pool_full(s), timeout=90), f'the pool never filled: {prepared_runs(s)}'
        for code, language in (('print(6 * 7)', 'python3'), ('console.log(6 * 7)', 'nodejs')):
            body = run(s, code, language)
            assert body['code'] == 0 and body['data']['stdout'] == '42\n', body
    finally:
        rc = s.stop()
        log = s.log_text()
        s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'
    assert "step 'clocks'" not in log, log[-3000:]
    warnings = [line for line in log.splitlines() if 'CAP_SYS_TIME' in line]
    assert len(warnings) == 1, log[-3000:]
    assert 'time namespace' in warnings[0] and "host's" in warnings[0], warnings
