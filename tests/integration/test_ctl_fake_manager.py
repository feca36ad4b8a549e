"""difysandboxctl against a fake manager: the real binary, a private dbus-daemon, and a small Python
service that implements org.difysandbox.Sandbox1 (dbus/org.difysandbox.Sandbox1.xml) with canned answers.

It checks what the real manager's system tests cannot easily force: every error path and exit status,
jobs that end before their method even replied, a manager that leaves the bus mid-job, the plain-lines,
progress-bar and JSON outputs. No root, no systemd; each test module starts and stops its own
dbus-daemon.

Run with Debian's pytest:  /usr/bin/python3 -m pytest -q tests/integration/test_ctl_fake_manager.py
The binary is $DIFYSANDBOXCTL, else build/src/ctl/difysandboxctl, else `difysandboxctl` on PATH.
This file is also the fake manager: `python3 test_ctl_fake_manager.py --serve ADDRESS CONTROL_DIR`.

The fake's behaviour is chosen by the request:
  InstallDependencies python3 [...]: a job that logs, moves 0% -> 50% -> 100% and is done; a package
    named "fail" makes it fail after 25 log lines, "slow" takes 10 s, "instant" ends it (signals and JobRemoved) before
    the reply is sent, "vanish" makes the manager leave the bus mid-job, "bad==" is InvalidArgs,
    "denied" AccessDenied, "busy" JobRunning.
  RefreshDependencies python3: a job that is done; nodejs: JobRunning (job 99 is always running).
  RemoveDependencies python3 [...]: a job that is done; "absent" makes it fail (not installed).
  ReloadConfig: ConfigInvalid with CONTROL_DIR/reload-error's text when that file exists, AccessDenied
    when CONTROL_DIR/reload-denied exists, else success.
"""

import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

NAME = 'org.difysandbox.Sandbox1'
PATH = '/org/difysandbox/Sandbox1'
MANAGER = 'org.difysandbox.Sandbox1.Manager'
JOB = 'org.difysandbox.Sandbox1.Job'
PROPS = 'org.freedesktop.DBus.Properties'

REPO = Path(__file__).resolve().parents[2]

# difysandboxctl(1), EXIT STATUS
EXIT_FAILURE, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_DENIED = 1, 2, 3, 4


# --------------------------------------------------------------------------------------------------------
# The fake manager (runs in its own process: python-dbus needs a GLib main loop)

def serve(address, control_dir):
    import dbus
    import dbus.service
    from dbus.mainloop.glib import DBusGMainLoop
    from gi.repository import GLib

    conn = dbus.bus.BusConnection(address, mainloop=DBusGMainLoop())
    loop = GLib.MainLoop()
    control = Path(control_dir)
    T = dbus.UInt64

    def error(name, message):
        return dbus.exceptions.DBusException(message, name=name)

    class Properties(dbus.service.Object):
        interface = None

        def props(self):
            return {}

        @dbus.service.method(PROPS, in_signature='ss', out_signature='v')
        def Get(self, interface, name):
            return self.props()[name]

        @dbus.service.method(PROPS, in_signature='s', out_signature='a{sv}')
        def GetAll(self, interface):
            if interface != self.interface:
                raise error('org.freedesktop.DBus.Error.UnknownInterface', interface)
            return dbus.Dictionary(self.props(), signature='sv')

        @dbus.service.signal(PROPS, signature='sa{sv}as')
        def PropertiesChanged(self, interface, changed, invalidated):
            pass

    class Job(Properties):
        interface = JOB

        def __init__(self, manager, number, language, kind):
            self.path = f'{PATH}/job/{number}'
            super().__init__(conn, self.path)
            self.manager, self.number, self.language, self.kind = manager, number, language, kind
            self.state, self.progress, self.log = 'running', 0.0, ''

        def props(self):
            return {'Id': dbus.UInt32(self.number), 'Language': self.language, 'Kind': self.kind,
                    'State': self.state, 'Progress': dbus.Double(self.progress), 'Log': self.log}

        def update(self, state=None, progress=None, line=None):
            changed = {}
            if state is not None:
                self.state = changed['State'] = state
            if progress is not None:
                self.progress = progress
                changed['Progress'] = dbus.Double(progress)
            if line is not None:
                self.log += line + '\n'
                changed['Log'] = self.log
            self.PropertiesChanged(JOB, dbus.Dictionary(changed, signature='sv'), dbus.Array([], signature='s'))

        def end(self, result):
            self.update(state=result)
            self.manager.jobs.pop(self.path, None)
            self.manager.JobRemoved(self.path, result)
            self.remove_from_connection()

        def run(self, steps):
            """steps: (delay_ms, kwargs for update, or 'done'/'failed'/'vanish')."""
            def step():
                if not steps:
                    return False
                what = steps.pop(0)[1]
                if what == 'vanish':
                    conn.release_name(NAME)
                    GLib.timeout_add(300, lambda: conn.request_name(NAME) and False)
                elif isinstance(what, str):
                    self.end(what)
                else:
                    self.update(**what)
                if steps:
                    GLib.timeout_add(steps[0][0], step)
                return False
            GLib.timeout_add(steps[0][0], step)

    class Manager(Properties):
        interface = MANAGER

        def __init__(self):
            super().__init__(conn, PATH)
            self.jobs = {}
            self.next_job = 1
            busy = Job(self, 99, 'nodejs', 'refresh')
            busy.progress, busy.log = 0.4, 'npm install\n'
            self.jobs[busy.path] = busy

        def props(self):
            return {'Version': '0.1.0-fake', 'ActiveRuns': dbus.UInt32(2), 'UidPoolFree': dbus.UInt32(998),
                    'UidPoolSize': dbus.UInt32(1000), 'StartedAt': T(1714557600000000),
                    'ConfigLoadedAt': T(1714561200000000)}

        def new_job(self, language, kind):
            job = Job(self, self.next_job, language, kind)
            self.next_job += 1
            self.jobs[job.path] = job
            return job

        @dbus.service.method(MANAGER, in_signature='s', out_signature='a(ss)')
        def ListDependencies(self, language):
            if language != 'python3':
                return dbus.Array([], signature='(ss)')
            return dbus.Array([('requests', '2.31.0'), ('numpy', '1.26.4'), ('Jinja2', '3.1.3'),
                               ('certifi', '2024.2.2')], signature='(ss)')

        @dbus.service.method(MANAGER, in_signature='s', out_signature='a(sss)')
        def ListDependenciesEx(self, language):
            if language != 'python3':
                return dbus.Array([], signature='(sss)')
            return dbus.Array([('requests', '2.31.0', 'generation'), ('numpy', '1.24.2', 'runtime'),
                               ('Jinja2', '3.1.2', 'runtime'), ('certifi', '2022.9.24', 'runtime')],
                              signature='(sss)')

        @dbus.service.method(MANAGER, in_signature='sas', out_signature='o')
        def InstallDependencies(self, language, packages):
            if 'bad==' in packages:
                raise error('org.freedesktop.DBus.Error.InvalidArgs',
                            "invalid package 'bad==': not a requirement specifier")
            if 'denied' in packages:
                raise error('org.freedesktop.DBus.Error.AccessDenied', 'Access denied')
            if 'busy' in packages:
                raise error('org.difysandbox.Sandbox1.Error.JobRunning',
                            f'a dependency job for {language} is running already: {PATH}/job/99')
            job = self.new_job(language, 'install')
            names = ' '.join(packages)
            if 'instant' in packages:
                # everything happens before the reply: only a client that subscribed first sees it
                job.update(progress=0.0, line=f'Collecting {names}')
                job.update(progress=1.0, line='Successfully installed')
                job.end('done')
            elif 'fail' in packages:
                steps = [(20, dict(progress=0.1, line=f'Collecting {names}'))]
                steps += [(5, dict(line=f'pip: line {i}')) for i in range(1, 25)]
                steps += [(5, dict(progress=0.3, line='ERROR: No matching distribution found for fail')),
                          (20, 'failed')]
                job.run(steps)
            elif 'slow' in packages:
                job.run([(20, dict(progress=0.1, line=f'Collecting {names}'))] +
                        [(500, dict(line='still working')) for _ in range(20)] + [(20, 'done')])
            elif 'vanish' in packages:
                job.run([(20, dict(progress=0.2, line=f'Collecting {names}')), (50, 'vanish')])
            else:
                job.run([(20, dict(progress=0.0, line=f'Collecting {names}')),
                         (20, dict(progress=0.5, line=f'Installing collected packages: {names}')),
                         (20, dict(progress=1.0, line=f'Successfully installed {names}')),
                         (20, 'done')])
            return job.path

        @dbus.service.method(MANAGER, in_signature='s', out_signature='o')
        def RefreshDependencies(self, language):
            if language == 'nodejs':
                raise error('org.difysandbox.Sandbox1.Error.JobRunning',
                            f'a dependency job for nodejs is running already: {PATH}/job/99')
            job = self.new_job(language, 'refresh')
            job.run([(20, dict(progress=0.5, line='Refreshing from /etc/difysandbox/python-requirements.txt')),
                     (20, dict(progress=1.0)), (20, 'done')])
            return job.path

        @dbus.service.method(MANAGER, in_signature='sas', out_signature='o')
        def RemoveDependencies(self, language, packages):
            job = self.new_job(language, 'remove')
            names = ' '.join(packages)
            if 'absent' in packages:
                job.run([(20, dict(progress=0.02, line="error: package 'absent' is not installed")),
                         (20, 'failed')])
            else:
                job.run([(20, dict(progress=0.5, line=f'removing {names}')), (20, dict(progress=1.0)),
                         (20, 'done')])
            return job.path

        @dbus.service.method(MANAGER, in_signature='', out_signature='a(oss)')
        def ListJobs(self):
            return dbus.Array([(j.path, j.language, j.kind) for j in self.jobs.values()], signature='(oss)')

        @dbus.service.method(MANAGER, in_signature='', out_signature='')
        def ReloadConfig(self):
            if (control / 'reload-denied').exists():
                raise error('org.freedesktop.DBus.Error.AccessDenied', 'Access denied')
            if (control / 'reload-error').exists():
                raise error('org.difysandbox.Sandbox1.Error.ConfigInvalid',
                            (control / 'reload-error').read_text().strip())
            self.ConfigReloaded()

        @dbus.service.method(MANAGER, in_signature='', out_signature='a{sv}')
        def GetStats(self):
            st = lambda d: dbus.Dictionary({k: T(v) for k, v in d.items()}, signature='st')
            return dbus.Dictionary({
                'RunsByResult': st({'ok': 120, 'error': 4, 'timeout': 1, 'memory': 0, 'seccomp': 1,
                                    'rejected': 2}),
                'RunsByLanguage': dbus.Dictionary({
                    'python3': st({'ok': 95, 'error': 3, 'timeout': 1, 'seccomp': 1}),
                    'nodejs': st({'ok': 25, 'error': 1})}, signature='sa{st}'),
                'PoolByLanguage': dbus.Dictionary({
                    'python3': st({'hits': 2, 'misses': 1}),
                    'nodejs': st({'hits': 0, 'misses': 0})}, signature='sa{st}'),
                'Latency': dbus.Dictionary({
                    'python3': dbus.Struct((T(100), T(12400), T(30100), T(55000)), signature='tttt'),
                    'nodejs': dbus.Struct((T(0), T(0), T(0), T(0)), signature='tttt')}, signature='s(tttt)'),
                'ActiveRuns': dbus.UInt32(2), 'UidPoolFree': dbus.UInt32(998), 'UidPoolSize': dbus.UInt32(1000),
                'EgressDenials': T(4), 'UptimeUSec': T(3 * 3600 * 10**6 + 12 * 60 * 10**6),
                'StatsSinceUSec': T(1714557600000000), 'ConfigLoadedAtUSec': T(1714561200000000),
                'DependencyGenerations': st({'python3': 3, 'nodejs': 0}),
                # a newer manager's key, and a known key with a type this client does not know
                'FutureKey': dbus.Dictionary({'a': 'b'}, signature='ss'),
                'EgressBytes': dbus.String('not a number'),
            }, signature='sv')

        @dbus.service.signal(MANAGER, signature='os')
        def JobRemoved(self, job, result):
            pass

        @dbus.service.signal(MANAGER, signature='')
        def ConfigReloaded(self):
            pass

    Manager()
    conn.request_name(NAME)
    print('ready', flush=True)
    signal.signal(signal.SIGTERM, lambda *a: loop.quit())
    loop.run()


if __name__ == '__main__' and len(sys.argv) == 4 and sys.argv[1] == '--serve':
    serve(sys.argv[2], sys.argv[3])
    sys.exit(0)


# --------------------------------------------------------------------------------------------------------
# The tests

import pytest  # noqa: E402  (the fake manager above does not need it)

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def ctl_binary():
    path = os.environ.get('DIFYSANDBOXCTL')
    if path:
        return path
    built = REPO / 'build' / 'src' / 'ctl' / 'difysandboxctl'
    if built.exists():
        return str(built)
    return shutil.which('difysandboxctl')


class Bus:
    """A private dbus-daemon; difysandboxctl finds it through DBUS_SYSTEM_BUS_ADDRESS."""

    def __init__(self, directory):
        if not shutil.which('dbus-daemon'):
            pytest.skip('needs dbus-daemon')
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / 'bus.conf'
        config.write_text(BUS_CONFIG.format(socket=directory / 'bus.sock'))
        p = subprocess.run(['dbus-daemon', f'--config-file={config}', '--fork', '--print-address=1',
                            '--print-pid=1', '--nopidfile'], capture_output=True, text=True, timeout=10,
                           check=True)
        self.address, pid = p.stdout.split()[:2]
        self.pid = int(pid)
        self.manager = None

    def start_manager(self, control_dir):
        try:
            import dbus  # noqa: F401
            import gi  # noqa: F401
        except ImportError:
            self.stop()
            pytest.skip('the fake manager needs python3-dbus and python3-gi')
        self.manager = subprocess.Popen([sys.executable, __file__, '--serve', self.address, str(control_dir)],
                                        stdout=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.manager.stdout], [], [], 10)
        assert ready and self.manager.stdout.readline().strip() == 'ready', 'the fake manager did not start'

    def stop(self):
        if self.manager:
            self.manager.terminate()
            self.manager.wait(timeout=10)
        os.kill(self.pid, signal.SIGTERM)


@pytest.fixture(scope='module')
def ctl_bin():
    path = ctl_binary()
    if not path or not os.access(path, os.X_OK):
        pytest.skip('difysandboxctl not built: set DIFYSANDBOXCTL')
    return path


@pytest.fixture(scope='module')
def control(tmp_path_factory):
    return tmp_path_factory.mktemp('control')


@pytest.fixture(scope='module')
def bus(tmp_path_factory, control):
    b = Bus(tmp_path_factory.mktemp('bus'))
    b.start_manager(control)
    yield b
    b.stop()


@pytest.fixture(scope='module')
def empty_bus(tmp_path_factory):
    b = Bus(tmp_path_factory.mktemp('empty-bus'))
    yield b
    b.stop()


def ctl_env(address, **extra):
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'LANG': 'C.UTF-8', 'TZ': 'UTC',
           'DBUS_SYSTEM_BUS_ADDRESS': address}
    env.update(extra)
    return env


@pytest.fixture
def ctl(ctl_bin, bus):
    def run(*args, env=None):
        return subprocess.run([ctl_bin, *args], env=env or ctl_env(bus.address), capture_output=True,
                              text=True, timeout=20)
    return run


def one_line_error(p):
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


# --- reaching the manager


def test_no_system_bus(ctl_bin):
    p = subprocess.run([ctl_bin, 'status'], env=ctl_env('unix:path=/nonexistent/bus'), capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == EXIT_UNREACHABLE
    assert one_line_error(p) == (
        'difysandboxctl: cannot reach the difysandbox manager: no system bus at unix:path=/nonexistent/bus '
        '(No such file or directory). Is D-Bus running? (systemctl status dbus)')
    assert p.stdout == ''


def test_no_manager_on_the_bus(ctl_bin, empty_bus):
    p = subprocess.run([ctl_bin, 'deps', 'install', 'python3', 'requests'], env=ctl_env(empty_bus.address),
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == EXIT_UNREACHABLE
    line = one_line_error(p)
    assert line.startswith('difysandboxctl: cannot reach the difysandbox manager on the system bus '
                           '(org.difysandbox.Sandbox1): ')
    assert line.endswith('. Is difysandbox-manager.service running? (systemctl status difysandbox-manager)')
    assert 'org.difysandbox.Sandbox1' in line[len('difysandboxctl: cannot reach'):]


# --- reads


def test_status(ctl):
    p = ctl('status')
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:5] == ['Version:        0.1.0-fake', 'Uptime:         3h 12min', 'Active runs:    2',
                         'UID pool:       998 of 1000 free',
                         # the share of hits rounded down (2 of 3: 66%), none without runs
                         'Warm pool:      python3 2 hits, 1 misses (66%); nodejs 0 hits, 0 misses']
    assert re.fullmatch(r'Config loaded:  2024-05-01 11:00:00 UTC \(\d+d( \d+h)? ago\)', lines[5])
    assert lines[6:] == ['Generations:    python3 3, nodejs none',
                         'Jobs:           /org/difysandbox/Sandbox1/job/99 (refresh nodejs): running, 40%']


def test_status_json(ctl):
    p = ctl('--json', 'status')
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {
        'version': '0.1.0-fake', 'uptime_usec': 11520000000, 'active_runs': 2, 'uid_pool_free': 998,
        'uid_pool_size': 1000, 'config_loaded_at_usec': 1714561200000000,
        'pool_by_language': {'python3': {'hits': 2, 'misses': 1}, 'nodejs': {'hits': 0, 'misses': 0}},
        'dependency_generations': {'python3': 3, 'nodejs': 0},
        'jobs': [{'job': '/org/difysandbox/Sandbox1/job/99', 'language': 'nodejs', 'kind': 'refresh',
                  'state': 'running', 'progress': 0.4}]}


def test_stats(ctl):
    p = ctl('stats')
    assert p.returncode == 0, p.stderr
    assert re.match(r'Runs since 2024-05-01 10:00:00 UTC \(\d+d( \d+h)? ago\):\n\n', p.stdout)
    assert p.stdout.split(':\n\n', 1)[1] == (
        'LANGUAGE  TOTAL   ok  error  timeout  memory  seccomp  rejected\n'
        'python3     100   95      3        1       0        1         0\n'
        'nodejs       26   25      1        0       0        0         0\n'
        'all         128  120      4        1       0        1         2\n'
        '\n'
        'Latency from admission to result:\n'
        '\n'
        'LANGUAGE  SAMPLES  P50 MS  P95 MS  P99 MS\n'
        'python3       100    12.4    30.1    55.0\n'
        'nodejs          0       -       -       -\n'
        '\n'
        'Runs served by the warm pool (hits) or prepared on demand (misses):\n'
        '\n'
        'LANGUAGE  HITS  MISSES  HIT RATE\n'
        'python3      2       1       66%\n'
        'nodejs       0       0         -\n'
        '\n'
        'Active runs:     2\n'
        'UID pool:        998 of 1000 free\n'
        'Egress denials:  4\n')


def test_stats_json_ignores_unknown_keys(ctl):
    p = ctl('stats', '--json')
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stdout)
    assert set(stats) == {'runs_by_result', 'runs_by_language', 'pool_by_language', 'latency', 'active_runs',
                          'uid_pool_free', 'uid_pool_size', 'egress_denials', 'uptime_usec',
                          'stats_since_usec', 'config_loaded_at_usec', 'dependency_generations'}
    assert stats['runs_by_result']['rejected'] == 2
    assert stats['runs_by_language']['nodejs'] == {'ok': 25, 'error': 1}
    assert stats['pool_by_language'] == {'python3': {'hits': 2, 'misses': 1}, 'nodejs': {'hits': 0, 'misses': 0}}
    assert stats['latency']['python3'] == {'samples': 100, 'p50_usec': 12400, 'p95_usec': 30100,
                                           'p99_usec': 55000}


def test_deps_list_sorted(ctl):
    p = ctl('deps', 'list', 'python3')
    assert p.returncode == 0, p.stderr
    assert p.stdout == ('NAME      VERSION    ORIGIN\n'
                        'certifi   2022.9.24  runtime\n'
                        'Jinja2    3.1.2      runtime\n'
                        'numpy     1.24.2     runtime\n'
                        'requests  2.31.0     generation\n')
    p = ctl('--json', 'deps', 'list', 'python3')
    assert json.loads(p.stdout)[0] == {'name': 'certifi', 'version': '2022.9.24', 'origin': 'runtime'}
    p = ctl('deps', 'list', 'nodejs')
    assert (p.returncode, p.stdout) == (0, 'NAME  VERSION  ORIGIN\n')


# --- jobs


def job_path(stdout):
    m = re.search(r'/org/difysandbox/Sandbox1/job/\d+', stdout)
    assert m, stdout
    return m.group(0)


def test_install_plain_lines(ctl):
    p = ctl('deps', 'install', 'python3', 'requests', 'numpy')
    assert p.returncode == 0, p.stderr
    path = job_path(p.stdout)
    lines = p.stdout.splitlines()
    assert lines[0] == f'Started job {path} (install python3).'
    # 'progress 0%' comes first or after the first log line: from GetAll, or from the first signal
    assert lines[1:3] in (['progress 0%', 'Collecting requests numpy'],
                          ['Collecting requests numpy', 'progress 0%'])
    assert lines[3:-1] == ['Installing collected packages: requests numpy', 'progress 50%',
                           'Successfully installed requests numpy', 'progress 100%']
    assert re.fullmatch(rf'Job {path} \(install python3\) done after \d+ms\.|'
                        rf'Job {path} \(install python3\) done after \d+\.\ds\.', lines[-1])
    assert p.stderr == ''


def test_install_json(ctl):
    p = ctl('--json', 'deps', 'install', 'python3', 'requests')
    assert p.returncode == 0, p.stderr
    o = json.loads(p.stdout)
    assert o == {'job': o['job'], 'result': 'done',
                 'log': 'Collecting requests\nInstalling collected packages: requests\n'
                        'Successfully installed requests\n'}
    assert o['job'].startswith('/org/difysandbox/Sandbox1/job/')


def test_install_ends_before_the_reply(ctl):
    """All signals and JobRemoved come before the method's reply: nothing may be missed, nor hang."""
    p = ctl('--json', 'deps', 'install', 'python3', 'instant')
    assert p.returncode == 0, p.stderr
    o = json.loads(p.stdout)
    assert (o['result'], o['log']) == ('done', 'Collecting instant\nSuccessfully installed\n')


def test_install_failed_prints_log_tail(ctl):
    p = ctl('deps', 'install', 'python3', 'fail')
    assert p.returncode == EXIT_FAILURE
    path = job_path(p.stdout)
    assert re.search(rf'^Job {re.escape(path)} \(install python3\) failed after ', p.stdout, re.M)
    err = p.stderr.splitlines()
    assert err[0] == f'difysandboxctl: job {path} (install python3) failed; the last 20 lines of its log:'
    assert err[1:] == [f'pip: line {i}' for i in range(6, 25)] + [
        'ERROR: No matching distribution found for fail']

    p = ctl('--json', 'deps', 'install', 'python3', 'fail')
    assert p.returncode == EXIT_FAILURE
    o = json.loads(p.stdout)
    assert o['result'] == 'failed' and o['log'].endswith('ERROR: No matching distribution found for fail\n')
    assert p.stderr.splitlines()[-1] == 'ERROR: No matching distribution found for fail'


def test_install_no_wait(ctl):
    p = ctl('--no-wait', 'deps', 'install', 'python3', 'requests')
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r'/org/difysandbox/Sandbox1/job/\d+\n', p.stdout)
    p = ctl('deps', 'install', '--no-wait', '--json', 'python3', 'requests')
    assert p.returncode == 0, p.stderr
    assert list(json.loads(p.stdout)) == ['job']


def test_manager_leaves_mid_job(ctl):
    p = ctl('deps', 'install', 'python3', 'vanish')
    assert p.returncode == EXIT_UNREACHABLE
    path = job_path(p.stdout)
    assert one_line_error(p) == (
        f'difysandboxctl: the difysandbox manager left the bus while job {path} (install python3) was '
        'running; its result is unknown. (systemctl status difysandbox-manager)')
    time.sleep(0.5)  # the fake takes its name back


@pytest.mark.parametrize('signo', [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_following_only(ctl_bin, bus, signo):
    p = subprocess.Popen([ctl_bin, 'deps', 'install', 'python3', 'slow'], env=ctl_env(bus.address),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    path = job_path(first)
    for line in p.stdout:  # following: the job's first log line is out
        if 'Collecting slow' in line:
            break
    else:
        pytest.fail('difysandboxctl ended before the job logged')
    p.send_signal(signo)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 128 + signo
    assert err == (f'difysandboxctl: stopped following job {path} (install python3); it keeps running '
                   '(see difysandboxctl status)\n')
    status = subprocess.run([ctl_bin, '--json', 'status'], env=ctl_env(bus.address), capture_output=True,
                            text=True, timeout=10)
    assert path in [j['job'] for j in json.loads(status.stdout)['jobs']]


def test_refresh(ctl):
    p = ctl('deps', 'refresh', 'python3')
    assert p.returncode == 0, p.stderr
    path = job_path(p.stdout)
    lines = [line for line in p.stdout.splitlines() if line != 'progress 0%']  # GetAll's, if it came first
    assert lines[1:-1] == ['Refreshing from /etc/difysandbox/python-requirements.txt', 'progress 50%',
                           'progress 100%']
    assert lines[-1].startswith(f'Job {path} (refresh python3) done after ')


def test_remove(ctl):
    """deps remove is a job followed like install: RemoveDependencies with the names, its progress, its
    end; a failed one exits 1 with the job's log."""
    p = ctl('deps', 'remove', 'python3', 'requests', 'numpy')
    assert p.returncode == 0, p.stderr
    path = job_path(p.stdout)
    lines = [line for line in p.stdout.splitlines() if line != 'progress 0%']
    assert lines[0] == f'Started job {path} (remove python3).'
    assert lines[1:-1] == ['removing requests numpy', 'progress 50%', 'progress 100%']
    assert lines[-1].startswith(f'Job {path} (remove python3) done after ')

    p = ctl('deps', 'remove', 'python3', 'absent')
    assert p.returncode == EXIT_FAILURE
    assert "error: package 'absent' is not installed" in p.stderr


def test_progress_bar_on_a_terminal(ctl_bin, bus):
    master, slave = pty.openpty()
    fcntl_winsize = struct.pack('HHHH', 24, 60, 0, 0)
    import fcntl
    fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl_winsize)
    p = subprocess.Popen([ctl_bin, 'deps', 'install', 'python3', 'a-package-with-a-rather-long-name'],
                         stdout=slave, stderr=slave, env=ctl_env(bus.address, TERM='xterm'))
    os.close(slave)
    out = b''
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=10) == 0
    os.close(master)
    text = out.decode()
    assert '\r' in text and '100% [####################]' in text, text
    for frame in re.findall(r'\r([^\r\n\x1b]*)\x1b\[K', text):
        assert len(frame) <= 59, frame  # never wraps a 60-column terminal
    assert re.search(r'\d+% \[[#-]{20}\] Collecting a-package-wi\.\.\. 0:00', text), text
    assert re.search(r'\r\x1b\[KJob /org/difysandbox/Sandbox1/job/\d+ \(install python3\) done after ', text)


# --- the manager says no


@pytest.mark.parametrize('args, line', [
    (('deps', 'install', 'python3', 'bad=='),
     "difysandboxctl: invalid package 'bad==': not a requirement specifier "
     '(org.freedesktop.DBus.Error.InvalidArgs)'),
    (('deps', 'install', 'python3', 'busy'),
     'difysandboxctl: a dependency job for python3 is running already: /org/difysandbox/Sandbox1/job/99 '
     '(org.difysandbox.Sandbox1.Error.JobRunning)'),
    (('deps', 'refresh', 'nodejs'),
     'difysandboxctl: a dependency job for nodejs is running already: /org/difysandbox/Sandbox1/job/99 '
     '(org.difysandbox.Sandbox1.Error.JobRunning)'),
])
def test_refused(ctl, args, line):
    p = ctl(*args)
    assert (p.returncode, p.stdout, one_line_error(p)) == (EXIT_FAILURE, '', line)


def test_access_denied(ctl):
    p = ctl('deps', 'install', 'python3', 'denied')
    assert (p.returncode, p.stdout) == (EXIT_DENIED, '')
    assert one_line_error(p) == 'difysandboxctl: permission denied: changing difysandbox needs root (try sudo)'


def test_reload(ctl, control):
    p = ctl('reload')
    assert (p.returncode, p.stdout, p.stderr) == (0, '', '')

    (control / 'reload-error').write_text("/etc/difysandbox/config.yaml:3: max_workers: '0': must be at least 1\n")
    try:
        p = ctl('reload')
    finally:
        (control / 'reload-error').unlink()
    assert (p.returncode, p.stdout) == (EXIT_FAILURE, '')
    assert one_line_error(p) == (
        'difysandboxctl: the manager refused the configuration and keeps the one in force: '
        "/etc/difysandbox/config.yaml:3: max_workers: '0': must be at least 1 "
        '(org.difysandbox.Sandbox1.Error.ConfigInvalid)')

    (control / 'reload-denied').touch()
    try:
        p = ctl('reload')
    finally:
        (control / 'reload-denied').unlink()
    assert p.returncode == EXIT_DENIED
    assert one_line_error(p) == 'difysandboxctl: permission denied: changing difysandbox needs root (try sudo)'


# --- refresh --if-due


def if_due_setup(tmp_path, interval, age_seconds=None):
    runtime = tmp_path / 'runtime'
    packages = runtime / 'python3' / 'packages'
    packages.mkdir(parents=True)
    if age_seconds is not None:
        (packages / 'gen-3').mkdir()
        (packages / 'current').symlink_to('gen-3')
        t = time.time() - age_seconds
        os.utime(packages / 'current', (t, t), follow_symlinks=False)
    config = tmp_path / 'config.yaml'
    config.write_text(f'python_deps_update_interval: {interval}\nruntime_dir: {runtime}\n')
    return config


def test_if_due_fresh_generation_is_skipped(ctl, tmp_path):
    config = if_due_setup(tmp_path, '30m', age_seconds=120)
    p = ctl('--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert (p.returncode, p.stderr) == (0, '')
    assert p.stdout == ('Not refreshing python3: the current generation (gen-3) is 2min old, '
                        'python_deps_update_interval is 30min.\n')
    p = ctl('--json', '--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert json.loads(p.stdout) == {'job': None, 'result': 'skipped', 'reason': (
        'the current generation (gen-3) is 2min old, python_deps_update_interval is 30min')}


def test_if_due_interval_zero_is_refused_with_the_reason(ctl, tmp_path):
    """Upstream's ticker cannot take 0 either: the loader refuses it, and --if-due says why."""
    config = if_due_setup(tmp_path, '0', age_seconds=10**6)
    p = ctl('--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert p.returncode == EXIT_FAILURE, p
    assert 'python_deps_update_interval' in p.stderr and 'must be at least' in p.stderr, p.stderr


def test_if_due_old_generation_is_refreshed(ctl, tmp_path):
    config = if_due_setup(tmp_path, '30m', age_seconds=2 * 3600 + 60)
    p = ctl('--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == ('Refreshing python3: the current generation (gen-3) is 2h 1min old, '
                        'python_deps_update_interval is 30min.')
    assert lines[1].startswith('Started job /org/difysandbox/Sandbox1/job/')


def test_if_due_without_generation_is_refreshed(ctl, tmp_path):
    config = if_due_setup(tmp_path, '30m')
    p = ctl('--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == (
        f'Refreshing python3: there is no current generation ({tmp_path}/runtime/python3/packages/current).')


def test_if_due_bad_config(ctl, tmp_path):
    config = tmp_path / 'config.yaml'
    config.write_text('python_deps_update_interval: soon\n')
    p = ctl('--config', str(config), 'deps', 'refresh', '--if-due', 'python3')
    assert (p.returncode, p.stdout) == (EXIT_FAILURE, '')
    assert one_line_error(p).startswith(f'difysandboxctl: invalid configuration: {config}:1: '
                                        "python_deps_update_interval: 'soon': ")
    p = ctl('--config', str(tmp_path / 'missing.yaml'), 'deps', 'refresh', '--if-due', 'python3')
    assert (p.returncode, one_line_error(p)) == (
        EXIT_FAILURE,
        f'difysandboxctl: cannot read the configuration {tmp_path}/missing.yaml: No such file or directory')


# --- the command line (nothing is sent)


@pytest.mark.parametrize('args, line', [
    ((), 'difysandboxctl: missing command'),
    (('frob',), "difysandboxctl: unknown command 'frob'"),
    (('--frob', 'status'), "difysandboxctl: unknown option '--frob'"),
    (('status', 'extra'), "difysandboxctl: 'status' takes no arguments, got 'extra'"),
    (('deps',), 'difysandboxctl: missing deps command: expected list, install, remove or refresh'),
    (('deps', 'list', 'ruby'), "difysandboxctl: unknown language 'ruby': expected python3 or nodejs"),
    (('deps', 'install', 'python3'), "difysandboxctl: 'deps install' needs at least one PACKAGE"),
    (('deps', 'remove', 'python3'), "difysandboxctl: 'deps remove' needs at least one PACKAGE"),
    (('deps', 'refresh'), "difysandboxctl: 'deps refresh' needs a LANGUAGE (python3 or nodejs)"),
    (('--no-wait', 'status'), "difysandboxctl: --no-wait applies to 'deps install', 'deps remove' and 'deps refresh' only"),
    (('--if-due', 'deps', 'list', 'python3'), "difysandboxctl: --if-due applies to 'deps refresh' only"),
    (('status', '--config'), "difysandboxctl: option '--config' needs an argument"),
])
def test_usage(ctl_bin, args, line):
    p = subprocess.run([ctl_bin, *args], env=ctl_env('unix:path=/nonexistent/bus'), capture_output=True,
                       text=True, timeout=10)
    assert (p.returncode, p.stdout) == (EXIT_USAGE, '')
    err = p.stderr.splitlines()
    assert err[0] == line
    assert err[1].startswith('Usage: difysandboxctl ')


def test_help_and_version(ctl_bin):
    p = subprocess.run([ctl_bin, '--help'], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and p.stdout.startswith('Usage: difysandboxctl ') and 'difysandboxctl(1)' in p.stdout
    p = subprocess.run([ctl_bin, '--version'], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and re.fullmatch(r'difysandboxctl \S+\n', p.stdout)
