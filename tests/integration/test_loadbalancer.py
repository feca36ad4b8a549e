"""Scaling out (docs/scaling.md): nginx from Debian in front of two `difysandbox serve` instances on
loopback, configured with the shipped examples/nginx/difysandbox.conf itself. Only its two upstream
`server` addresses and its `listen` line are changed, and the test checks that nothing else was.

Each instance stands for one host: a config file of its own with its own state_dir (admission slots,
UID locks) and a UID range of its own, as two hosts have. nginx runs with a prefix, main config, logs
and pid file in a temporary directory, on a free loopback port; the system's nginx service is never
touched.

What passing proves:
  - Dify's own client (its python3, javascript and jinja2 code templates, as serve_helpers copies
    them) gets its results through nginx, and least_conn spreads the runs over both hosts;
  - X-Api-Key reaches the hosts (a wrong key is the host's 401), and a body beyond code_max gets the
    host's JSON answer, not an nginx error page (client_max_body_size);
  - with one instance stopped (SIGTERM, then gone), every run still succeeds: nginx's connection to
    the stopped one is refused and nginx passes the POST to the other host, which is safe because the
    request was never sent (nginx's error log shows the refused connect);
  - a run that a host has received is never repeated on the other host when that host fails during
    the run (its worker SIGKILLed): the client gets 502, and the other host ran nothing. This is the
    decision to leave `non_idempotent` out of proxy_next_upstream.

Needs root (the sandbox does) and nginx (Debian package `nginx`).
"""

import difflib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import children_of
from serve_helpers import (HEADERS, dify_execute_code, dify_execute_workflow_code_template, free_port,
                           start_server)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / 'examples' / 'nginx' / 'difysandbox.conf'
NGINX_PACKAGE = 'nginx'
STARTUP_TIMEOUT = 15

# Two hosts' worth of state: distinct state_dir and UID ranges, away from the default 10000-10999
# pool that other suites of this machine use.
UID_RANGES = ((23000, 23063), (23100, 23163))


# ------------------------------------------------------------------------------------------- nginx

def render_example(text, backends, listen_port):
    """The example with its upstream `server HOST:PORT` lines pointed at backends (in order) and its
    `listen` at 127.0.0.1:listen_port. Fails if the example no longer has exactly that shape."""
    upstream = re.search(r'^upstream\s+difysandbox\s*\{(.*?)^\}', text, re.M | re.S)
    assert upstream, f'{EXAMPLE} has no `upstream difysandbox {{ ... }}` block'
    server_line = re.compile(r'^(\s*server\s+)\S+:\d+(\s[^;\n]*)?;', re.M)
    block = upstream.group(1)
    servers = server_line.findall(block)
    assert len(servers) == len(backends), \
        f'{EXAMPLE}: expected {len(backends)} upstream `server` lines, found {len(servers)}'
    addresses = iter(backends)
    block = server_line.sub(lambda m: f'{m.group(1)}{next(addresses)}{m.group(2) or ""};', block)
    text = text[:upstream.start(1)] + block + text[upstream.end(1):]
    text, n = re.subn(r'^(\s*listen\s+)\d+;', rf'\g<1>127.0.0.1:{listen_port};', text, flags=re.M)
    assert n == 1, f'{EXAMPLE}: expected one `listen PORT;` line, found {n}'
    return text


class Nginx:
    """nginx with its own prefix in a temporary directory, including the rendered example."""

    def __init__(self, backends):
        self.binary = shutil.which('nginx') or '/usr/sbin/nginx'
        if not os.access(self.binary, os.X_OK):
            pytest.fail(f'nginx is not installed: the Debian package `{NGINX_PACKAGE}` belongs in '
                        'TEST_PACKAGES of scripts/lib/setup.sh')
        self.dir = Path(tempfile.mkdtemp(prefix='difysandbox-nginx-'))
        # nginx's workers run as nobody: they must reach the temp directories below the prefix.
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.url = f'http://127.0.0.1:{self.port}'
        self.error_log = self.dir / 'error.log'
        original = EXAMPLE.read_text()
        self.site = render_example(original, backends, self.port)
        changed = [line for line in difflib.unified_diff(original.splitlines(), self.site.splitlines(),
                                                         lineterm='', n=0)
                   if line[:1] in '+-' and not line.startswith(('+++', '---'))]
        assert len(changed) == 2 * (len(backends) + 1), \
            'rendering changed more than the server and listen lines:\n' + '\n'.join(changed)
        (self.dir / 'difysandbox.conf').write_text(self.site)
        (self.dir / 'nginx.conf').write_text(f"""\
worker_processes 1;
pid {self.dir}/nginx.pid;
error_log {self.error_log} info;
events {{
        worker_connections 256;
}}
http {{
        access_log {self.dir}/access.log;
        client_body_temp_path {self.dir}/client_body;
        proxy_temp_path {self.dir}/proxy;
        fastcgi_temp_path {self.dir}/fastcgi;
        uwsgi_temp_path {self.dir}/uwsgi;
        scgi_temp_path {self.dir}/scgi;
        include {self.dir}/difysandbox.conf;
}}
""")
        self.proc = None

    def start(self):
        test = subprocess.run([self.binary, '-t', '-p', str(self.dir), '-c', str(self.dir / 'nginx.conf'),
                               '-e', str(self.error_log)], capture_output=True, text=True, timeout=30)
        assert test.returncode == 0, f'nginx -t refuses the example:\n{test.stderr}\n{self.site}'
        self.log = open(self.dir / 'nginx.out', 'wb')
        self.proc = subprocess.Popen([self.binary, '-p', str(self.dir), '-c', str(self.dir / 'nginx.conf'),
                                      '-e', str(self.error_log), '-g', 'daemon off;'],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            assert self.proc.poll() is None, f'nginx exited {self.proc.returncode}:\n{self.errors()}'
            try:
                r = requests.get(self.url + '/health', timeout=5)
                if r.status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, f'nginx did not answer /health:\n{self.errors()}'
            time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()

    def errors(self):
        try:
            return self.error_log.read_text(errors='replace')
        except OSError:
            return ''

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, code, language='python3', key=HEADERS['X-Api-Key'], timeout=60):
        return requests.post(self.url + '/v1/sandbox/run', headers={'X-Api-Key': key}, timeout=timeout,
                             json={'language': language, 'code': code, 'preload': '', 'enable_network': True})


# ---------------------------------------------------------------------------------------- fixtures

def host_config(state_dir, uids, **extra):
    return {'state_dir': str(state_dir), 'uid_min': uids[0], 'uid_max': uids[1], **extra}


class Cluster:
    def __init__(self, **config):
        self.state = Path(tempfile.mkdtemp(prefix='difysandbox-lb-state-'))
        self.hosts = []
        self.nginx = None
        try:
            for i, uids in enumerate(UID_RANGES):
                self.hosts.append(start_server(host_config(self.state / f'host{i}', uids, **config)))
            self.nginx = Nginx([f'127.0.0.1:{h.port}' for h in self.hosts]).start()
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.nginx:
            self.nginx.stop()
            self.nginx.cleanup()
        for host in self.hosts:
            host.stop()
            host.cleanup()
        shutil.rmtree(self.state, ignore_errors=True)


def run_records(host):
    return [r for r in host.records() if r.get('ROUTE') == '/v1/sandbox/run']


def wait_runs(hosts, n, timeout=10):
    """Until the hosts together have recorded n runs (a record follows its answer) or timeout."""
    deadline = time.monotonic() + timeout
    while sum(len(run_records(h)) for h in hosts) < n and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def cluster():
    c = Cluster()
    yield c
    c.close()


@pytest.fixture
def cluster_without_prewarm():
    # Without prewarm a child of a runner has a run only while it serves a request: that is how the test
    # finds the host that holds the request.
    c = Cluster(prewarm=False)
    yield c
    c.close()


# ------------------------------------------------------------------------------------------- tests

def test_runs_are_balanced_over_both_hosts(cluster):
    nginx, hosts = cluster.nginx, cluster.hosts
    r = requests.get(nginx.url + '/health', timeout=10)
    assert (r.status_code, r.content) == (200, b'"ok"')

    session = requests.Session()  # Dify keeps its connections (httpx pool)
    for i in range(4):
        result = dify_execute_workflow_code_template(
            nginx.url, 'python3', 'def main(a: int) -> dict:\n    return {"sum": a + 1}', {'a': i}, session)
        assert result == {'sum': i + 1}
        result = dify_execute_workflow_code_template(
            nginx.url, 'javascript', 'function main({a}) {\n    return {double: a * 2}\n}', {'a': i}, session)
        assert result == {'double': i * 2}
        result = dify_execute_workflow_code_template(nginx.url, 'jinja2', 'n={{ n }}', {'n': i}, session)
        assert result == {'result': f'n={i}'}

    wait_runs(hosts, 12)
    served = [len(run_records(host)) for host in hosts]
    assert sum(served) == 12, f'runs recorded by the hosts: {served}, expected 12 in all'
    assert all(n > 0 for n in served), f'nginx sent every run to one host: {served}'
    # Each host ran with its own UID range: the configs reached them.
    for host, (low, high) in zip(hosts, UID_RANGES):
        uids = {int(r['UID']) for r in run_records(host) if 'UID' in r}
        assert uids and all(low <= u <= high for u in uids), (host.url, uids, (low, high))


def test_api_key_and_body_size(cluster):
    nginx, hosts = cluster.nginx, cluster.hosts
    r = nginx.run('print(1)', key='not-the-key')
    assert (r.status_code, r.content) == (401, b''), 'a wrong key must get the host\'s own empty 401'
    r = nginx.run('print(1)')
    assert r.status_code == 200 and r.json()['data']['stdout'] == '1\n'

    # 1000 KB of code: above nginx's default client_max_body_size (1m), within the hosts' code_max.
    r = nginx.run('#' + 'x' * 1_000_000 + '\nprint("big")', timeout=120)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    assert r.json()['data']['stdout'] == 'big\n'

    # Beyond what a host reads: nginx refuses it itself (413). Sent on, the host would refuse it
    # before reading it, nginx would see a reset, answer 502 and take that host out of rotation.
    wait_runs(hosts, 2)
    before = [len(run_records(h)) for h in hosts]
    for _ in range(len(hosts)):
        r = nginx.run('#' + 'x' * 17_000_000, timeout=120)
        assert r.status_code == 413, (r.status_code, r.text[:300])
    assert 'while sending request to upstream' not in nginx.errors(), nginx.errors()
    for i in range(4):  # both hosts are still in rotation
        assert dify_execute_code(nginx.url, 'python3', '', f'print({i})') == f'{i}\n'
    wait_runs(hosts, sum(before) + 4)
    after = [len(run_records(h)) for h in hosts]
    assert all(a > b for a, b in zip(after, before)), f'runs per host before {before}, after {after}'


def test_runs_succeed_with_one_host_stopped(cluster):
    nginx, (stopped, survivor) = cluster.nginx, cluster.hosts
    for i in range(4):  # both hosts in use, connections to both in nginx's keep-alive pool
        assert dify_execute_code(nginx.url, 'python3', '', f'print({i})') == f'{i}\n'
    wait_runs(cluster.hosts, 4)
    assert run_records(stopped), 'the host to be stopped never served a run: nothing would be proved'

    assert stopped.stop() == 0, 'difysandbox serve did not exit 0 on SIGTERM'
    before = len(run_records(survivor))
    session = requests.Session()
    for i in range(10):
        assert dify_execute_code(nginx.url, 'python3', '', f'print("after-{i}")', session) == f'after-{i}\n'
        assert dify_execute_code(nginx.url, 'nodejs', '', f'console.log("js-{i}")', session) == f'js-{i}\n'
    wait_runs([survivor], before + 20)
    assert len(run_records(survivor)) == before + 20

    # nginx did try the stopped host and passed the POST on: a refused connect is the one failure
    # after which nginx re-sends a non-idempotent request.
    refused = [line for line in nginx.errors().splitlines()
               if 'Connection refused' in line and f':{stopped.port}' in line]
    assert refused, 'nginx never tried the stopped host (so its retry was not exercised):\n' + nginx.errors()


def test_a_received_run_is_never_repeated_on_the_other_host(cluster_without_prewarm):
    nginx, hosts = cluster_without_prewarm.nginx, cluster_without_prewarm.hosts
    before = [len(run_records(h)) for h in hosts]
    answer = {}

    def post():
        try:
            answer['response'] = nginx.run('import time\ntime.sleep(4)\nprint("ran")')
        except requests.RequestException as e:
            answer['error'] = e

    thread = threading.Thread(target=post)
    thread.start()
    # The host serving the request is the one whose runner has a handler with a child (its run). Its
    # workers (the connections from nginx) all die, as with a host lost mid-run.
    victim, deadline = None, time.monotonic() + 10
    while victim is None and time.monotonic() < deadline:
        for i, host in enumerate(hosts):
            if any(children_of(h) for h in host.handlers()):
                victim = i
        time.sleep(0.02)
    assert victim is not None, 'no runner of either host started the run within 10 s'
    for worker in hosts[victim].workers():
        os.kill(worker, signal.SIGKILL)  # serve's children, not yet reaped
    victim = (victim, None)
    thread.join(60)

    assert 'response' in answer, f'no answer from nginx: {answer.get("error")!r}'
    r = answer['response']
    assert r.status_code == 502, f'expected 502 for a run lost with its host, got {r.status_code} {r.text[:200]}'
    time.sleep(1)
    after = [len(run_records(h)) for h in hosts]
    other = 1 - victim[0]
    assert after[other] == before[other], 'nginx sent the run again to the other host: it ran twice'
    assert after[victim[0]] == before[victim[0]]
