"""The escape corpus (tests/escape, see its README): every case runs through the real sandbox.

A case fails if the marker shows up in the run's output, if the result is not one its header allows (`refused`:
the run went on after its filters refused a call and named it, which is how a call outside the policy is
answered, DESIGN §3.7; `seccomp`: a never-allow call killed it), if the
JSON breaks the result contract, or if the run left anything on the host: a process with a pool UID, a
run-* cgroup, a held UID lock, a mount, a file in a runtime tree's tmp directory.
"""

import re
import signal

import pytest

from conftest import (HOST_PROBES, MARKER, RESULTS, contract_problems, host_refusal, host_snapshot,
                      leftovers, load_corpus, run_snippet)

CASES = load_corpus()

# A case that may be killed prints the line "calling" right before its attack: a kill must come after it,
# or the case died of something else and its attack was never tried.
CALLING = re.compile(r"^\s*(print\('calling', flush=True\)|console\.log\('calling'\);)$", re.M)


def test_corpus_is_well_formed():
    assert len([c for c in CASES if c.language == 'python3']) >= 50
    assert len([c for c in CASES if c.language == 'nodejs']) >= 20
    bad = []
    for c in CASES:
        if not c.expect or not c.expect <= RESULTS | {'any', 'refused'}:
            bad.append(f'{c.id}: expect-result {sorted(c.expect)}')
        if not c.attack:
            bad.append(f'{c.id}: no attack line')
        if MARKER in c.code:
            bad.append(f'{c.id}: the marker is written literally (echoing the source would print it)')
        if 'MARK' not in c.code and 'DIFYSANDBOX-' not in c.code and c.expect != {'ok'}:
            bad.append(f'{c.id}: never prints the marker')
        if 'seccomp' in c.expect and not CALLING.search(c.code):
            bad.append(f'{c.id}: may be killed but prints no "calling" line right before its attack')
        if c.host_probe and (c.host_probe not in HOST_PROBES or c.expect != {'seccomp'}):
            bad.append(f'{c.id}: host-probe {c.host_probe!r} needs a known probe and expect-result seccomp')
    assert not bad, '\n'.join(bad)


def killed_by_the_host(case, res):
    """True where the host itself refuses the case's call (its host-probe says so) and the run died of
    exactly that signal: the attack was blocked before seccomp was consulted."""
    refusal = host_refusal(case.host_probe) if case.host_probe else None
    if refusal is None or res['result'] != 'error':
        return False
    return (res['exit_code'] == 128 + refusal and f'killed by signal {int(refusal)}' in res['error'])


@pytest.mark.parametrize('case', CASES, ids=[c.id for c in CASES])
def test_escape(case):
    before = host_snapshot()
    res = run_snippet(case.code, case.language, case.options)
    after = host_snapshot()

    problems = []
    by_host = killed_by_the_host(case, res)
    if by_host:
        print(f'{case.id}: the host kills this call with {host_refusal(case.host_probe).name} outside any '
              f'sandbox too; accepted instead of the seccomp kill')
    if MARKER in res.raw_stdout or MARKER in res.raw_stderr:
        problems.append(f'ESCAPED: the marker was printed ({case.attack})')
    refused = 'refused' in case.expect and res['result'] in ('ok', 'error') and res.get('refused_calls')
    if 'any' not in case.expect and res['result'] not in case.expect and not by_host and not refused:
        problems.append(f'result {res["result"]!r}, expected one of {sorted(case.expect)}'
                        + (' (no refused call was named)' if 'refused' in case.expect else ''))
    if (res['result'] == 'seccomp' or by_host) and CALLING.search(case.code):
        last = res['stdout'].rstrip('\n').rpartition('\n')[2]
        if last != 'calling':
            problems.append('killed before its attack was tried (the last line of stdout is not "calling")')
    problems += contract_problems(res)
    problems += leftovers(before, after, res['uid'])
    assert not problems, f'{case.id}: ' + '\n'.join(problems) + res.show()


def test_a_host_refusal_is_accepted_only_as_the_probed_signal(monkeypatch):
    """On a host that kills `int $0x80` itself, only a run that died of that very signal passes as blocked;
    on a host that lets it through, only the seccomp kill does. Checked here whatever this host does."""
    import conftest
    case = next(c for c in CASES if c.host_probe == 'int80')
    segv = {'result': 'error', 'exit_code': 139, 'error': 'process exited with code 139\nerror: killed by signal 11\n'}
    monkeypatch.setitem(conftest._host_probe_results, 'int80', signal.SIGSEGV)
    assert killed_by_the_host(case, segv)
    assert not killed_by_the_host(case, dict(segv, exit_code=0, result='ok', error=''))
    assert not killed_by_the_host(case, {'result': 'error', 'exit_code': 132,
                                         'error': 'process exited with code 132\nerror: killed by signal 4\n'})
    monkeypatch.setitem(conftest._host_probe_results, 'int80', None)
    assert not killed_by_the_host(case, segv)
