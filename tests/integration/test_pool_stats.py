"""Pool hits and misses in the statistics (issue 25, item 4) through a real `difysandbox serve`: a run
served by a prepared run of the warm pool counts as a hit of its language, a run prepared on demand (no
pool for its language, or a burst larger than the pool) as a miss. serve has no manager, so the test reads
the statistics file of its own state_dir as the manager does (src/common/stats.h: StatsFile)."""

import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest
import requests

from serve_helpers import HEADERS, children_of, process_uid, start_server
from test_privsep import _waits_for_code, wait_until

UID_MIN, UID_MAX = 24200, 24215  # a range of its own: neighbours' ranges must not overlap
POOL_ENV = {'DIFYSANDBOX_POOL_SIZE_PYTHON3': '1', 'DIFYSANDBOX_POOL_SIZE_NODEJS': '0'}
BURST = 4

# StatsFile, version 4 (src/common/stats.h): the header, then runs[language][result] (python3 = 0,
# nodejs = 1; the six RunResults and "rejected"), rejected_unknown_language, egress_denials, then
# pool_hits[language] and pool_misses[language]. The version check below fails when the layout moves.
STATS_MAGIC = 0x5441545342534453
STATS_VERSION = 4
LANGUAGES = ('python3', 'nodejs')
RESULTS = 7
HEADER = struct.Struct('<QIIQQQ')  # magic, version, reserved, size, created_realtime_usec, generation
RUNS_OFFSET = HEADER.size
POOL_OFFSET = RUNS_OFFSET + (len(LANGUAGES) * RESULTS + 2) * 8


def read_stats(state_dir):
    data = (Path(state_dir) / 'stats').read_bytes()
    magic, version, _, size, _, _ = HEADER.unpack_from(data)
    assert (magic, version, size) == (STATS_MAGIC, STATS_VERSION, len(data)), (hex(magic), version, size)
    words = lambda offset, n: struct.unpack_from(f'<{n}Q', data, offset)
    runs = words(RUNS_OFFSET, len(LANGUAGES) * RESULTS)
    pool = words(POOL_OFFSET, 2 * len(LANGUAGES))
    return {lang: {'ok': runs[i * RESULTS], 'hits': pool[i], 'misses': pool[len(LANGUAGES) + i]}
            for i, lang in enumerate(LANGUAGES)}


def serve_with_pool(uid_min, uid_max, env):
    """`difysandbox serve` with a pool as env sizes it, its own UID range and state_dir (for one module)."""
    state = tempfile.mkdtemp(prefix='difysandbox-pool-stats-')
    s = start_server({'uid_min': uid_min, 'uid_max': uid_max, 'state_dir': state, 'worker_timeout': 30},
                     env=env)
    s.state_dir = state
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


@pytest.fixture(scope='module')
def pooled():
    yield from serve_with_pool(UID_MIN, UID_MAX, POOL_ENV)


def _preloaded(pid):
    try:
        return 'pandas' in open(f'/proc/{pid}/maps').read()
    except OSError:
        return False


def prepared_runs(server, uid_min, uid_max):
    """PIDs of the pool's prepared runs: the handlers' children with a UID of the server's range."""
    return [pid for slot in server.handlers() for pid in children_of(slot)
            if uid_min <= (process_uid(pid) or 0) <= uid_max]


def ready_python_run(server, preloaded=False):
    """The UID of the pool's one prepared python run once it waits for its code (and, with preloaded, has
    its preloads imported: the first fill's kind)."""
    runs = prepared_runs(server, UID_MIN, UID_MAX)
    if len(runs) != 1 or not _waits_for_code(runs[0]) or (preloaded and not _preloaded(runs[0])):
        return None
    return process_uid(runs[0])


def run(server, code, language='python3'):
    # enable_network, as Dify always sends it: the pool holds that kind of run (network is on by default).
    body = {'language': language, 'code': code, 'preload': '', 'enable_network': True}
    r = requests.post(server.url + '/v1/sandbox/run', json=body, headers=HEADERS, timeout=120)
    assert r.status_code == 200, (r.status_code, r.text)
    assert r.json()['code'] == 0, r.json()
    return r.json()['data']


def test_runs_count_as_pool_hits_and_misses(pooled):
    assert read_stats(pooled.state_dir) == {lang: {'ok': 0, 'hits': 0, 'misses': 0} for lang in LANGUAGES}

    # A ready pool serves the run: its UID is the prepared run's, and it counts as a hit.
    uid = wait_until(lambda: ready_python_run(pooled, preloaded=True), timeout=60)
    assert uid, 'the pool never held a prepared python run'
    time.sleep(0.5)  # the slot's "ready" message reaches the runner just after the run blocks in read()
    data = run(pooled, 'import os\nprint(os.getuid())')
    assert int(data['stdout']) == uid, ('not the pool\'s run', data, uid)
    stats = read_stats(pooled.state_dir)
    assert stats['python3'] == {'ok': 1, 'hits': 1, 'misses': 0}, stats

    # No pool for node (pool_size.nodejs: 0): prepared on demand, a miss.
    assert run(pooled, 'console.log(6 * 7)', 'nodejs')['stdout'] == '42\n'
    stats = read_stats(pooled.state_dir)
    assert stats['nodejs'] == {'ok': 1, 'hits': 0, 'misses': 1}, stats
    assert stats['python3'] == {'ok': 1, 'hits': 1, 'misses': 0}, stats

    # A burst larger than the pool: the one prepared run serves one request, the rest are prepared on
    # demand. The pool may make one light run meanwhile (it prepares only while fewer runs run than the
    # host has CPUs), so at least BURST - 2 are misses; each run is one or the other.
    assert wait_until(lambda: ready_python_run(pooled), timeout=60), 'the pool did not refill'
    time.sleep(0.5)
    errors = []

    def one():
        try:
            run(pooled, 'import time\ntime.sleep(1)\nprint("done")')
        except Exception as e:  # reported below, by the test's thread
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors
    stats = read_stats(pooled.state_dir)
    python = stats['python3']
    assert python['ok'] == 1 + BURST, stats
    assert python['hits'] + python['misses'] == 1 + BURST, stats
    assert python['hits'] >= 2 and python['misses'] >= BURST - 2, stats  # the first hit, the burst's
    assert stats['nodejs'] == {'ok': 1, 'hits': 0, 'misses': 1}, stats


# Two pandas code nodes in a row (issue 25, item 4): with pool_size.python3 at 2, both find pandas imported.
# Before, the first took the preloaded slot and the second a light one made on demand, which imported
# pandas itself (0.98x its floor on a new connection).
TWO_UID_MIN, TWO_UID_MAX = 24220, 24235
TWO_POOL_ENV = {'DIFYSANDBOX_POOL_SIZE_PYTHON3': '2', 'DIFYSANDBOX_POOL_SIZE_NODEJS': '0'}
PANDAS_NODE = ("import sys, os\n"
               "had = 'pandas' in sys.modules\n"
               "import pandas\n"
               "print(had, os.getuid(), pandas.DataFrame({'a': [1, 2]})['a'].sum())")


@pytest.fixture(scope='module')
def pooled_two():
    yield from serve_with_pool(TWO_UID_MIN, TWO_UID_MAX, TWO_POOL_ENV)


def ready_runs(server, uid_min, uid_max):
    """{uid: preloaded} of the prepared python runs that wait for their code."""
    return {process_uid(pid): _preloaded(pid) for pid in prepared_runs(server, uid_min, uid_max)
            if _waits_for_code(pid)}


def two_preloaded(server, uid_min, uid_max):
    """The UIDs of the two prepared python runs once both wait for their code with pandas imported."""
    uids = {uid for uid, preloaded in ready_runs(server, uid_min, uid_max).items() if preloaded}
    return uids if len(uids) == 2 else None


def test_two_pandas_code_nodes_in_a_row_both_find_pandas_imported(pooled_two):
    uids = wait_until(lambda: two_preloaded(pooled_two, TWO_UID_MIN, TWO_UID_MAX), timeout=120)
    assert uids, 'the pool never held two preloaded python runs'
    time.sleep(0.5)  # the slots' "ready" messages reach the runner just after the runs block in read()

    served = []
    for _ in range(2):  # one right after the other, each on a new connection, as Dify's nodes come
        had, uid, total = run(pooled_two, PANDAS_NODE)['stdout'].split()
        assert (had, total) == ('True', '3'), ('pandas was not imported before the code', had, uid)
        served.append(int(uid))
    assert set(served) == uids, ('not the two preloaded runs', served, uids)
    stats = read_stats(pooled_two.state_dir)
    assert stats['python3'] == {'ok': 2, 'hits': 2, 'misses': 0}, stats


# Code that names no preload module (preload-match.h) takes a light prepared run before a preloaded one,
# and such code alone makes the pool preload nothing: under steady `print(1)` load the pool replaced light
# runs with preloaded ones in every pause, which the next `print(1)` then spent (issue 25: prewarm cost
# throughput at one client). Code that imports a preload makes the pool preload again.
MIX_UID_MIN, MIX_UID_MAX = 24240, 24255
UID_CODE = 'import os\nprint(os.getuid())'
IDLE_SECONDS = 6  # several of the runner's CPU-idle windows (1 s) after the 100 ms pause


@pytest.fixture(scope='module')
def pooled_mix():
    yield from serve_with_pool(MIX_UID_MIN, MIX_UID_MAX, TWO_POOL_ENV)


def test_other_code_takes_a_light_run_and_makes_the_pool_preload_nothing(pooled_mix):
    # The first fill, before any run: both preloaded.
    ready = lambda: ready_runs(pooled_mix, MIX_UID_MIN, MIX_UID_MAX)
    first = wait_until(lambda: two_preloaded(pooled_mix, MIX_UID_MIN, MIX_UID_MAX), timeout=120)
    assert first, ('the pool never held two preloaded python runs', ready())
    time.sleep(0.5)  # the slots' "ready" messages reach the runner just after the runs block in read()

    # No light run yet: a preloaded one serves (a prepared run beats one made on demand).
    assert int(run(pooled_mix, UID_CODE)['stdout']) in first
    # Its replacement is light, and stays light through idle seconds: nothing asked for pandas.
    after = wait_until(lambda: (lambda r: r if len(r) == 2 else None)(ready()), timeout=60)
    assert after, ('the pool did not refill', ready())
    time.sleep(IDLE_SECONDS)
    now = ready()
    assert sorted(now.values()) == [False, True], ('the pool preloaded for code that never imports', now)
    light = next(uid for uid, pre in now.items() if not pre)
    preloaded = next(uid for uid, pre in now.items() if pre)
    time.sleep(0.5)

    # The light run serves the next such code; the preloaded one is left for code that imports pandas.
    assert int(run(pooled_mix, UID_CODE)['stdout']) == light
    had, uid, total = run(pooled_mix, PANDAS_NODE)['stdout'].split()
    assert (had, int(uid), total) == ('True', preloaded, '3'), ('not the preloaded run', had, uid, preloaded)

    # Code that imported pandas: once the CPUs are idle, the pool preloads again.
    again = wait_until(lambda: two_preloaded(pooled_mix, MIX_UID_MIN, MIX_UID_MAX), timeout=120)
    assert again, ('the pool did not preload after code that imports pandas', ready())
    stats = read_stats(pooled_mix.state_dir)
    assert stats['python3'] == {'ok': 3, 'hits': 3, 'misses': 0}, stats
