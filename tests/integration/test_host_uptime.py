"""Issue 12 item 5: a run must not learn the host's uptime (a side channel on the host and its other
tenants). sysinfo(2) fails with ENOSYS (test_isolation.py); what remained were CLOCK_BOOTTIME, which
libuv's uv_uptime() (Node's os.uptime()) falls back to when /proc/uptime is absent, as it is in a run,
and CLOCK_MONOTONIC (Python's time.monotonic()). A run's boot and monotonic clocks now count from the
run's own start (a time namespace, src/sandbox/child.c)."""

import json
import subprocess
import time

# A run's boot clock starts when its child is made, within the `difysandbox run` command: it can never
# exceed that command's wall time. One second of slack covers the rounding of the two readings only.
SLACK_S = 1.0


def host_uptime():
    with open('/proc/uptime') as f:
        return float(f.read().split()[0])


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
    got = ok_json(res)
    # Before the fix, os.uptime() was the host's: `before` or more, far above the command's wall time.
    assert before > res.wall + SLACK_S, 'the host booted too recently to tell its uptime from the run\'s'
    assert 0 <= got['uptime'] <= res.wall + SLACK_S, f'host uptime {before:.0f} s, run saw {got}' + res.show()
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
    got = ok_json(res)
    assert before > res.wall + SLACK_S, 'the host booted too recently to tell its uptime from the run\'s'
    assert 0 <= got['boottime'] <= res.wall + SLACK_S, f'host uptime {before:.0f} s, run saw {got}' + res.show()
    assert 0 <= got['monotonic'] <= res.wall + SLACK_S, f'host uptime {before:.0f} s, run saw {got}' + res.show()
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


def test_without_cap_sys_time_a_run_fails_closed_and_says_why():
    """A container that drops CAP_SYS_TIME (nspawn and Docker do by default) cannot write a time
    namespace's offsets. The run must then fail at the 'clocks' step with the kernel's reason, not run
    with the host's clocks and not report an invented error (it said 'Input/output error')."""
    from conftest import command, sandbox_env
    proc = subprocess.run(['setpriv', '--bounding-set', '-sys_time', '--inh-caps', '-all', '--'] +
                          command('python3', ()), input=b'print(1)\n', stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=sandbox_env(), timeout=120)
    out = proc.stdout.decode('utf-8', 'replace') + proc.stderr.decode('utf-8', 'replace')
    assert proc.returncode != 0, out
    assert "step 'clocks'" in out and 'Operation not permitted' in out, out
    assert '"stdout":"1\\n"' not in out.replace(' ', ''), out

