"""bench/soak judges answers, excuses faults and counts leaks: these tests show that its judgement can
fail, so that a green soak means something. No server, no root: the harness's own functions only
(the soak itself runs in ./scripts/test as `bench/soak --quick`)."""

import importlib.machinery
import importlib.util
import json
import random
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[2] / 'bench' / 'soak'


@pytest.fixture(scope='module')
def soak():
    loader = importlib.machinery.SourceFileLoader('soak', str(SOAK))
    spec = importlib.util.spec_from_loader('soak', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def envelope(**data):
    return json.dumps({'code': 0, 'message': 'success', 'data': data}).encode()


def harness(soak):
    """A Soak without a server: enough for judge(), excused() and leaked()."""
    s = soak.Soak.__new__(soak.Soak)
    s.windows = []
    return s


def test_every_workload_has_a_check_that_refuses_a_wrong_answer(soak):
    rng = random.Random(1)
    seen = set()
    for _ in range(400):
        name, language, network, code, check = soak.workload(rng, 4711)
        seen.add(name)
        assert check({'stdout': 'something else\n', 'error': ''}) is not None, name
        assert check({'stdout': '', 'error': 'process exited with code 1\n'}) is not None, name
    assert seen == {'print-py', 'print-js', 'error', 'timeout', 'memory', 'flood', 'net-off', 'net-on'}


def test_the_right_answer_passes_and_a_wrong_one_is_named(soak):
    s = harness(soak)
    check = soak.expect_stdout('42\n')
    assert s.judge(200, envelope(stdout='42\n', error=''), check) == (None, None)
    kind, msg = s.judge(200, envelope(stdout='41\n', error=''), check)
    assert kind == 'answer' and '41' in msg
    assert s.judge(500, b'{}', check)[0] == 'http'
    assert s.judge(200, json.dumps({'code': -500, 'message': 'x'}).encode(), check)[0] == 'http'
    timeout = soak.expect_error('error: timeout', 'start\n')
    assert s.judge(200, envelope(stdout='start\n', error='process exited with code 137\nerror: timeout\n'),
                   timeout) == (None, None)
    assert s.judge(200, envelope(stdout='start\n', error='error: memory limit exceeded\n'), timeout)[0] == 'answer'


def test_a_fault_excuses_only_its_own_errors_and_only_while_it_lasts(soak):
    s = harness(soak)
    s.windows = [('kill-interpreter', 10.0, 12.0), ('stop-worker', 20.0, 22.0)]
    killed = 'stdout ... [error: \'process exited with code 137\\nerror: killed by signal 9\\n\']'
    timed_out = 'stdout ... [error: \'process exited with code 137\\nerror: timeout\\n\']'
    assert s.excused('answer', killed, 9.5, 10.5)
    assert not s.excused('answer', timed_out, 9.5, 10.5), 'a kill from outside must not read as a timeout'
    assert not s.excused('answer', killed, 13.0, 14.0), 'outside the window'
    assert not s.excused('transport', 'ConnectionResetError', 9.5, 10.5), 'not what kill-interpreter does'
    assert not s.excused('answer', timed_out, 20.5, 21.0), 'a stopped worker excuses nothing'
    s.windows.append(('kill-worker', 30.0, 30.5))
    assert s.excused('transport', 'RemoteDisconnected', 29.0, 31.0)
    assert not s.excused('http', "code -500: 'the runner ended the run without an answer'", 29.0, 31.0)
    s.windows.append(('kill-server', 40.0, 43.0))
    assert s.excused('http', "code -500: 'the runner ended the run without an answer (x): Connection reset'",
                     39.0, 41.0)
    assert not s.excused('http', "code -500: 'internal error'", 39.0, 41.0), 'only the runner\'s death'
    assert not s.excused('http', 'HTTP 400: ...', 39.0, 41.0)


def test_leaks_are_counts_above_the_baseline_and_rss_beyond_its_margin(soak):
    s = harness(soak)
    base = {'serve RSS KiB': 6000, 'serve fds': 6, 'cgroups/scopes': 9, 'UID locks held': 3}
    assert s.leaked(base, dict(base)) == []
    assert s.leaked(base, {**base, 'cgroups/scopes': 8}) == [], 'the pool refilling is not a leak'
    assert s.leaked(base, {**base, 'cgroups/scopes': 10}) == ['cgroups/scopes']
    assert s.leaked(base, {**base, 'UID locks held': 4, 'serve fds': 7}) == ['serve fds', 'UID locks held']
    assert s.leaked(base, {**base, 'serve RSS KiB': 6000 + 15 * 1024}) == []
    assert s.leaked(base, {**base, 'serve RSS KiB': 6000 + 17 * 1024}) == ['serve RSS KiB']


def test_signals_go_only_to_the_process_that_was_seen(soak):
    """A PID whose start time differs (recycled, or never ours) is not signalled."""
    import os
    me = soak.stat_fields(os.getpid())
    assert me is not None
    assert soak.signal_ours(os.getpid(), me[1] + 1, 0) is False
    assert soak.signal_ours(os.getpid(), me[1], 0) is True  # signal 0: only the check
