"""Issue 12 item 5: a run must not learn the host's uptime (a side channel on the host and its other
tenants). sysinfo(2) fails with ENOSYS (test_isolation.py); what remained were CLOCK_BOOTTIME, which
libuv's uv_uptime() (Node's os.uptime()) falls back to when /proc/uptime is absent, as it is in a run,
and CLOCK_MONOTONIC (Python's time.monotonic()). A run's boot and monotonic clocks now start at a random
point of their own (a time namespace, src/sandbox/clocks.c): below 2^24 s, whatever the host's uptime
(issue 24 item 7: a start at zero told a prepared run's age, test_clocks.py)."""

import json
import subprocess
import time

# One second of slack covers the rounding of the readings only.
SLACK_S = 1.0
# A run's clocks start at a random time below this, to the nanosecond (src/sandbox/clocks.h).
START_SPAN_S = 2 ** 24


def host_uptime():
    with open('/proc/uptime') as f:
        return float(f.read().split()[0])


def not_the_hosts(value, before, after):
    """value is a reading of a run, taken between host uptimes before and after: it is not the host's
    (a random start lands in that window with a probability of (after - before + 2) / 2^24)."""
    return not (before - SLACK_S <= value <= after + SLACK_S) and 0 <= value < START_SPAN_S + after - before


def ok_json(res):
    assert res['result'] == 'ok' and res['exit_code'] == 0, res.show()
    return json.loads(res['stdout'])


def test_node_os_uptime_is_the_runs_not_the_hosts(run):
    before = host_uptime()
    res = run('''
const os = require('os'), fs = require('fs');
console.log(JSON.stringify({ uptime: os.uptime(), proc: fs.existsSync('/proc/uptime'),
                             hostname: os.hostname(), tmpdir: os.tmpdir() }));
''', language='nodejs')
    after = host_uptime()
    got = ok_json(res)
    # Before the fix, os.uptime() was the host's: between `before` and `after`.
    assert not_the_hosts(got['uptime'], before, after), f'host uptime {before:.0f} s, run saw {got}' + res.show()
    assert got['proc'] is False and got['tmpdir'] == '/tmp', res.show()  # os keeps working


def test_python_boot_clock_and_proc_uptime_are_the_runs(run):
    before = host_uptime()
    res = run('''
import json, os, shutil, time
try:
    proc = open('/proc/uptime').read()
except OSError as e:
    proc = e.errno
shutil.copy('/etc/passwd', '/tmp/p')
print(json.dumps({'boottime': time.clock_gettime(time.CLOCK_BOOTTIME), 'monotonic': time.monotonic(),
                  'proc': proc, 'copied': os.path.getsize('/tmp/p') > 0}))
''')
    after = host_uptime()
    got = ok_json(res)
    for clock in ('boottime', 'monotonic'):
        assert not_the_hosts(got[clock], before, after), f'host uptime {before:.0f} s, run saw {got}' + res.show()
    # /proc is not mounted in a run: /proc/uptime cannot be read at all (ENOENT), so it cannot leak.
    assert got['proc'] == 2, res.show()
    assert got['copied'], res.show()


def test_the_boot_clock_advances_inside_a_run(run):
    """The offset hides the host's figure but leaves a working clock: sleep() and timeouts still work."""
    res = run('''
import json, time
a = time.clock_gettime(time.CLOCK_BOOTTIME); time.sleep(0.2); b = time.clock_gettime(time.CLOCK_BOOTTIME)
print(json.dumps({'a': a, 'b': b}))
''')
    got = ok_json(res)
    assert got['b'] > got['a'] >= 0, res.show()


def test_timing_phases_stay_on_one_clock(run):
    """The runner compares the enter library's timestamp, taken inside the run's time namespace, with its
    own clock: the offset is added back, so the interpreter's start is neither negative (clamped to 0)
    nor the host's uptime long."""
    res = run('print(1)\n', options=('--timing',))
    assert res['result'] == 'ok', res.show()
    phases = json.loads(res.raw_stdout)['timing']
    assert 0 < phases['interpreter'] <= res.wall * 1000, phases
    assert 0 < phases['user_code'] <= res.wall * 1000, phases


def test_without_cap_sys_time_runs_work_and_one_warning_says_why():
    """A container that drops CAP_SYS_TIME (nspawn and Docker do by default) cannot write a time
    namespace's offsets. Every run failed at step 'clocks' (issue 24 item 8). Runs now go on without a
    time namespace (their clocks are the host's), and the command says so once, naming CAP_SYS_TIME."""
    from conftest import command, sandbox_env
    proc = subprocess.run(['setpriv', '--bounding-set', '-sys_time', '--inh-caps', '-all', '--'] +
                          command('python3', ()), input=b'print(1)\n', stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=sandbox_env(), timeout=120)
    out, err = proc.stdout.decode('utf-8', 'replace'), proc.stderr.decode('utf-8', 'replace')
    assert proc.returncode == 0, out + err
    assert json.loads(out)['stdout'] == '1\n', out + err
    warnings = [line for line in err.splitlines() if 'CAP_SYS_TIME' in line]
    assert len(warnings) == 1 and 'time namespace' in warnings[0], err
