"""Fixtures for the HTTP suites (test_api.py, test_admission.py): a real `difysandbox serve --listen
127.0.0.1:<free port>` per module, its log, and Dify's own client logic.

The binary is $DIFYSANDBOX, else `difysandbox` on PATH, else /usr/local/bin/difysandbox, as in
conftest.py. A binary without the `serve` verb skips these suites with that reason. Requests go to
loopback only. Test modules import what they use: `from serve_helpers import ...` (fixtures included).
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent

import pytest
import requests

API_KEY = 'dify-sandbox'
HEADERS = {'X-Api-Key': API_KEY}
# Health probes of the helpers: one request per connection, whose worker ends with the answer.
PROBE_HEADERS = {'Connection': 'close'}
STARTUP_TIMEOUT = 15
STOP_TIMEOUT = 60


def sandbox_binary():
    return os.environ.get('DIFYSANDBOX') or shutil.which('difysandbox') or '/usr/local/bin/difysandbox'


def worker_binary():
    """difysandbox-worker: $DIFYSANDBOX_WORKER, else next to the installed prefix's libexec."""
    if os.environ.get('DIFYSANDBOX_WORKER'):
        return os.environ['DIFYSANDBOX_WORKER']
    prefix = Path(sandbox_binary()).resolve().parent.parent
    return str(prefix / 'libexec' / 'difysandbox-worker')


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def yaml_config(values):
    """A config.yaml in the upstream layout: app.* nested, the rest flat. Values are scalars."""
    app = {k[len('app.'):]: v for k, v in values.items() if k.startswith('app.')}
    lines = []
    if app:
        lines.append('app:')
        lines += [f'  {k}: {_yaml_scalar(v)}' for k, v in app.items()]
    lines += [f'{k}: {_yaml_scalar(v)}' for k, v in values.items() if not k.startswith('app.')]
    return '\n'.join(lines) + '\n'


def _yaml_scalar(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(str(v))


# One line per request: "METHOD=POST ROUTE=/v1/sandbox/run STATUS=200 ... PEER=127.0.0.1:4711 REQUEST=3 ...",
# with a "<6>" prefix only where stderr is a journal stream (log.c).
RECORD = re.compile(r'^(?:<\d>)?(METHOD=.*)$')
SERVING = re.compile(r'Serving on (\S+): (.*)$', re.M)


def children_of(pid):
    """PIDs whose parent is pid."""
    kids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as f:
                    if int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                        kids.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def process_status(pid):
    """/proc/PID/status as a dict, or {} for a process that is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            return dict((k, v.strip()) for k, v in (line.split(':', 1) for line in f if ':' in line))
    except OSError:
        return {}


def process_uid(pid):
    status = process_status(pid)
    return int(status['Uid'].split()[0]) if 'Uid' in status else None


class Server:
    """One `difysandbox serve` process on a free loopback port."""

    def __init__(self, config=None, env=None):
        self.binary = sandbox_binary()
        self.dir = Path(tempfile.mkdtemp(prefix='difysandbox-serve-'))
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        self.log_path = self.dir / 'serve.log'
        # No key is in force unless one is configured (issue 14): the tests' key is written out.
        # None leaves a key out.
        self.config = {k: v for k, v in {'app.key': API_KEY, **(config or {})}.items() if v is not None}
        self.args = [self.binary, 'serve', '--listen', f'127.0.0.1:{self.port}']
        if self.config:
            path = self.dir / 'config.yaml'
            path.write_text(yaml_config(self.config))
            self.args += ['--config', str(path)]
        self.env = {'PATH': os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}
        # Runtime trees other than the host's, e.g. built with difysandbox-prepare-runtime --runtime-dir
        # into a temporary directory while /var/lib/difysandbox is being rebuilt.
        if os.environ.get('DIFYSANDBOX_RUNTIME_DIR'):
            self.env['DIFYSANDBOX_RUNTIME_DIR'] = os.environ['DIFYSANDBOX_RUNTIME_DIR']
        self.env.update(env or {})
        self.proc = None
        self.effective = {}

    def start(self):
        self._check_verb()
        self.log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     env=self.env)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f'difysandbox serve exited {self.proc.returncode} at start:\n'
                                     + self.log_text())
            try:
                # Connection: close, so that the probe's worker goes with its answer: urllib3 2 (Debian 13)
                # keeps the connection open until the collector frees a cycle around the probe's failed
                # attempts, and tests that count serve's workers would find this one too.
                r = requests.get(self.url + '/health', timeout=2, headers=PROBE_HEADERS)
                if r.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f'difysandbox serve did not answer /health within {STARTUP_TIMEOUT} s:\n'
                                     + self.log_text())
            time.sleep(0.05)
        m = SERVING.search(self.log_text())
        assert m, 'no "Serving on" line in the log:\n' + self.log_text()
        self.effective = dict(kv.split('=', 1) for kv in m.group(2).split())
        return self

    def _check_verb(self):
        try:
            probe = subprocess.run([self.binary, 'serve', '--help'], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=30)
        except OSError as e:
            pytest.skip(f'cannot run {self.binary}: {e}')
        if probe.returncode != 0 or b'Unknown command' in probe.stdout:
            said = probe.stdout.decode(errors='replace').strip()
            pytest.skip(f'{self.binary} has no `serve` verb yet: {said}')

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f'difysandbox serve did not stop within {STOP_TIMEOUT} s of SIGTERM')
        finally:
            self.log.close()
        return self.proc.returncode

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self):
        try:
            return self.log_path.read_text(errors='replace')
        except OSError:
            return ''

    def records(self):
        """The per-request records so far, as dicts of their fields. Only whole lines count: a line that
        crosses a page of the log file reaches it in two copies, and a read in between sees its first part."""
        out = []
        text = self.log_text()
        for line in text[:text.rfind('\n') + 1].splitlines():
            m = RECORD.match(line)
            if m:
                out.append(dict(kv.split('=', 1) for kv in m.group(1).split()))
        return out

    def wait_records(self, n, timeout=10):
        """The records once there are at least n (a record is written after its answer is sent)."""
        deadline = time.monotonic() + timeout
        while len(self.records()) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.records()

    def children(self):
        """PIDs of the serve process's children: its runner and its connections' workers."""
        return children_of(self.proc.pid)

    def runner(self):
        """PID of serve's runner: its one child that runs as root (the workers do not). A worker is root too
        from its fork until it first runs and drops its privileges, which on a loaded host can take a
        while: another root child is waited out for a few seconds before it counts."""
        deadline = time.monotonic() + 5
        while len(roots := [pid for pid in self.children() if process_uid(pid) == 0]) > 1 and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(roots) == 1, f'expected one runner among serve\'s children, found {roots}'
        return roots[0]

    def workers(self):
        """PIDs of the serve process's worker children (one per connection, unprivileged)."""
        return [pid for pid in self.children() if process_uid(pid) not in (0, None)]

    def handlers(self):
        """PIDs of the runner's children: pool slots and the handlers of requests."""
        return children_of(self.runner())

    def healthy(self):
        """/health on a fresh connection, and the serve process still there."""
        assert self.proc.poll() is None, f'difysandbox serve died ({self.proc.returncode}):\n{self.log_text()}'
        r = requests.get(self.url + '/health', timeout=10, headers=PROBE_HEADERS)
        assert r.status_code == 200 and r.content == b'"ok"', (r.status_code, r.content)
        return True

    def run(self, code, language='python3', session=None, **extra):
        body = {'language': language, 'code': code, **extra}
        return (session or requests).post(self.url + '/v1/sandbox/run', json=body, headers=HEADERS, timeout=120)


def start_server(config=None, env=None):
    server = Server(config, env)
    try:
        return server.start()
    except BaseException:
        server.stop() if server.proc else None
        server.cleanup()
        raise


@pytest.fixture(scope='module')
def server():
    """`difysandbox serve` with the default configuration, for one test module."""
    s = start_server()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def require_config(server, **expected):
    """xfail unless the server runs with these effective values (config loading wired into serve)."""
    wrong = {k: (server.effective.get(k), v) for k, v in expected.items() if server.effective.get(k) != v}
    if wrong:
        pytest.xfail('difysandbox serve does not apply its --config yet (config_load() not wired into the '
                     f'build); effective vs wanted: {wrong}')


# ------------------------------------------------------------------------------ Dify's client, as is
# From dify api/core/helper/code_executor: the code templates and how the answer is read.

RESULT_TAG = '<<RESULT>>'


class CodeExecutionError(Exception):
    pass


def _serialize_inputs(inputs):
    return base64.b64encode(json.dumps(inputs, ensure_ascii=False).encode()).decode('utf-8')


def python3_runner(code, inputs):
    script = dedent(f"""
        # declare main function
        {{{{code}}}}

        import json
        from base64 import b64decode

        # decode and prepare input dict
        inputs_obj = json.loads(b64decode('{{{{inputs}}}}').decode('utf-8'))

        # execute main function
        output_obj = main(**inputs_obj)

        # convert output to json and print
        output_json = json.dumps(output_obj, indent=4)
        result = f'''{RESULT_TAG}{{output_json}}{RESULT_TAG}'''
        print(result)
        """)
    return script.replace('{{code}}', code).replace('{{inputs}}', _serialize_inputs(inputs)), ''


def javascript_runner(code, inputs):
    script = dedent(f"""
        // declare main function
        {{{{code}}}}

        // decode and prepare input object
        var inputs_obj = JSON.parse(Buffer.from('{{{{inputs}}}}', 'base64').toString('utf-8'))

        // execute main function
        var output_obj = main(inputs_obj)

        // convert output to json and print
        var output_json = JSON.stringify(output_obj)
        var result = `{RESULT_TAG}${{output_json}}{RESULT_TAG}`
        console.log(result)
        """)
    return script.replace('{{code}}', code).replace('{{inputs}}', _serialize_inputs(inputs)), ''


def jinja2_runner(template, inputs):
    script = dedent(f"""
        # declare main function
        def main(**inputs):
            import jinja2
            template = jinja2.Template('''{{{{code}}}}''')
            return template.render(**inputs)

        import json
        from base64 import b64decode

        # decode and prepare input dict
        inputs_obj = json.loads(b64decode('{{{{inputs}}}}').decode('utf-8'))

        # execute main function
        output = main(**inputs_obj)

        # convert output and print
        result = f'''{RESULT_TAG}{{output}}{RESULT_TAG}'''
        print(result)

        """)
    preload = dedent("""
        import jinja2
        from base64 import b64decode

        def _jinja2_preload_():
            # prepare jinja2 environment, load template and render before to avoid sandbox issue
            template = jinja2.Template('{{s}}')
            template.render(s='a')

        if __name__ == '__main__':
            _jinja2_preload_()

        """)
    return script.replace('{{code}}', template).replace('{{inputs}}', _serialize_inputs(inputs)), preload


RUNNERS = {'python3': ('python3', python3_runner), 'javascript': ('nodejs', javascript_runner),
           'jinja2': ('python3', jinja2_runner)}


def dify_execute_code(url, language, preload, code, session=None):
    """CodeExecutor.execute_code: what Dify does with the HTTP answer."""
    data = {'language': language, 'code': code, 'preload': preload, 'enable_network': True}
    try:
        response = (session or requests).post(url + '/v1/sandbox/run', json=data, headers=HEADERS, timeout=60)
        if response.status_code == 503:
            raise CodeExecutionError('Code execution service is unavailable')
        elif response.status_code != 200:
            raise Exception(f'Failed to execute code, got status code {response.status_code}, please check if '
                            'the sandbox service is running')
    except CodeExecutionError:
        raise
    except Exception as e:
        raise CodeExecutionError('Failed to execute code, which is likely a network issue, please check if the '
                                 f'sandbox service is running. ( Error: {e} )')
    try:
        response_data = response.json()
    except Exception:
        raise CodeExecutionError('Failed to parse response')
    if (code := response_data.get('code')) != 0:
        raise CodeExecutionError(f"Got error code: {code}. Got error msg: {response_data.get('message')}")
    data = response_data['data']
    assert set(data) >= {'stdout', 'error'}, response_data
    if data.get('error'):
        raise CodeExecutionError(data['error'])
    return data.get('stdout') or ''


def dify_execute_workflow_code_template(url, language, code, inputs, session=None):
    """CodeExecutor.execute_workflow_code_template: template in, result object out."""
    run_language, runner = RUNNERS[language]
    script, preload = runner(code, inputs)
    stdout = dify_execute_code(url, run_language, preload, script, session)
    m = re.search(rf'{RESULT_TAG}(.*){RESULT_TAG}', stdout, re.DOTALL)
    if not m:
        raise ValueError('Failed to parse result')
    if language == 'jinja2':
        return {'result': m.group(1)}
    return json.loads(m.group(1))


@dataclass
class RawReply:
    status: int
    head: bytes
    body: bytes
    closed: bool


def raw_request(port, data, timeout=15):
    """Sends raw bytes on a fresh connection and reads until the server closes it or timeout; the first
    answer's status, head and body."""
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.sendall(data)
        chunks, closed = [], False
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    closed = True
                    break
                chunks.append(b)
                text = b''.join(chunks)
                if b'\r\n\r\n' in text:
                    head, body = text.split(b'\r\n\r\n', 1)
                    m = re.search(rb'content-length:\s*(\d+)', head, re.I)
                    if m and len(body) >= int(m.group(1)):
                        break
        except socket.timeout:
            pass
        except ConnectionResetError:
            closed = True
    text = b''.join(chunks)
    head, _, body = text.partition(b'\r\n\r\n')
    m = re.match(rb'HTTP/1\.[01] (\d{3})', head)
    return RawReply(int(m.group(1)) if m else 0, head, body, closed)
