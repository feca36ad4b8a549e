"""Network egress of runs with network (src/egress, difysandbox.conf(5) "NETWORK EGRESS").

"The internet" is a network namespace of this test's own, dsbt-inet-<random>, joined to the host by a veth
pair: 198.51.100.1/24 on the host's side, 198.51.100.2/24 inside, where an HTTP server (8080) and an HTTPS
server (8443, self-signed) count the requests they get. 198.51.100.0/24 is TEST-NET-2, which the relay does
not deny. Runs reach it only through the relay; everything the policy refuses must get a 403 with its reason,
be reported, and never be connected to: listeners of the test on the host's loopback and on the host's own
198.51.100.1 count the connections they get, which must stay zero.

Chaining (proxy.http, proxy.https, proxy.socks5) goes to upstream proxies of the test on 127.0.0.1, which record
what they are asked and forward only to "the internet". The cloud metadata address is made real for one test:
169.254.169.254 inside the namespace with a counting listener, and a host route to it over the veth, in a routing
table of the test's own that only sockets of the relay's UID use (the host's own traffic to a metadata service
is not diverted). The last test runs 1000 runs with network through `difysandbox serve` and looks for what they
leave behind.

Needs root (namespaces, veth), `ip`, `openssl`, and the real `difysandbox run --network` (see conftest).
Every namespace, link, route and rule made here is removed by the fixtures' finalizers, even when a test fails.
"""

import base64
import gc
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import textwrap
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

from conftest import CANARY_NAME, CANARY_VALUE, UID_MAX, UID_MIN, command, parse_output
from serve_helpers import Server, yaml_config

HOST_ADDRESS = '198.51.100.1'  # the host's end of the veth: one of "this host's own addresses"
INET_ADDRESS = '198.51.100.2'  # "the internet"
HTTP_PORT = 8080
HTTPS_PORT = 8443
RUN_TIMEOUT = '30'  # seconds of one run: importing requests and httpx takes a while
RELAY_UID = 65534
PROXY_VARIABLES = ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY')

# The server inside the "internet" namespace: counts every request but those to /count.
SERVER = r'''
import http.server, json, socketserver, ssl, sys, threading
count = 0
lock = threading.Lock()
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def answer(self, body, status=200):
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        global count
        if self.path == '/count':
            return self.answer(json.dumps({'count': count}).encode())
        with lock:
            count += 1
        if self.path.startswith('/big/'):
            return self.answer(b'x' * int(self.path[5:]))
        self.answer(json.dumps({'line': self.requestline, 'headers': dict(self.headers.items()),
                                'tls': isinstance(self.connection, ssl.SSLSocket)}).encode())
    def do_POST(self):
        global count
        with lock:
            count += 1
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        self.answer(json.dumps({'line': self.requestline, 'body': body.decode('latin-1'),
                                'headers': dict(self.headers.items())}).encode())
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
address, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
server = Server((address, port), Handler)
if cert != '-':
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
'''


def ip(*args, check=True):
    return subprocess.run(['ip', *args], capture_output=True, text=True, check=check, timeout=30)


class Listener:
    """A TCP listener on the host that counts the connections it accepts (and closes them)."""

    def __init__(self, address):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stopped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                conn.settimeout(5)
                conn.recv(65536)  # the request, so that closing does not reset the connection
                conn.sendall(b'HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached')
            except OSError:
                pass
            conn.close()

    def close(self):
        self.stopped = True
        # shutdown() first: it wakes the thread blocked in accept(). A close() alone would leave the socket
        # listening for as long as that accept() lasts, answering later tests' connections to its port.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class Internet:
    def __init__(self):
        suffix = uuid.uuid4().hex[:6]
        self.netns = f'dsbt-inet-{suffix}'
        self.host_link = f'dsbt{suffix}h'
        self.ns_link = f'dsbt{suffix}n'
        self.servers = []
        self.tmp = tempfile.mkdtemp(prefix='dsbt-inet-')
        self.loopback = None
        self.own = None

    def count(self):
        """Requests the two servers in the namespace got (asked from the host, over the veth)."""
        total = 0
        for port in (HTTP_PORT, HTTPS_PORT):
            s = socket.create_connection((INET_ADDRESS, port), timeout=10)
            if port == HTTPS_PORT:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                s = context.wrap_socket(s)
            with s:
                s.sendall(b'GET /count HTTP/1.0\r\n\r\n')
                data = b''
                while chunk := s.recv(65536):
                    data += chunk
            total += json.loads(data.split(b'\r\n\r\n', 1)[1])['count']
        return total

    def start(self):
        routes = ip('-4', 'route', 'show', '198.51.100.0/24').stdout.strip()
        if routes:
            pytest.fail(f'198.51.100.0/24 is already routed on this host ({routes}); '
                        'another run of this suite, or a leftover of one, holds it')
        ip('netns', 'add', self.netns)
        ip('link', 'add', self.host_link, 'type', 'veth', 'peer', 'name', self.ns_link)
        ip('link', 'set', self.ns_link, 'netns', self.netns)
        ip('addr', 'add', f'{HOST_ADDRESS}/24', 'dev', self.host_link)
        ip('link', 'set', self.host_link, 'up')
        ip('-n', self.netns, 'addr', 'add', f'{INET_ADDRESS}/24', 'dev', self.ns_link)
        ip('-n', self.netns, 'link', 'set', self.ns_link, 'up')
        ip('-n', self.netns, 'link', 'set', 'lo', 'up')

        server = os.path.join(self.tmp, 'server.py')
        with open(server, 'w') as f:
            f.write(SERVER)
        cert, key = os.path.join(self.tmp, 'cert.pem'), os.path.join(self.tmp, 'key.pem')
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
                        '-days', '2', '-subj', '/CN=inet.test', '-addext', f'subjectAltName=IP:{INET_ADDRESS}'],
                       check=True, capture_output=True, timeout=60)
        for port, c, k in ((HTTP_PORT, '-', '-'), (HTTPS_PORT, cert, key)):
            self.servers.append(subprocess.Popen(
                ['ip', 'netns', 'exec', self.netns, '/usr/bin/python3', server, INET_ADDRESS, str(port), c, k],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while True:
            try:
                self.count()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

        self.loopback = Listener('127.0.0.1')
        self.own = Listener(HOST_ADDRESS)

    def stop(self):
        for listener in (self.loopback, self.own):
            if listener:
                listener.close()
        for p in self.servers:
            p.kill()
            p.wait(timeout=10)
        ip('netns', 'del', self.netns, check=False)
        ip('link', 'del', self.host_link, check=False)  # gone with the namespace's end, normally
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope='module')
def internet(request, sandbox_bin):
    inet = Internet()
    request.addfinalizer(inet.stop)  # first: whatever start() made is removed, even if it fails halfway
    inet.start()
    return inet


# --------------------------------------------------------------------------------------------- runs

def run_env(extra=None):
    """The environment of `difysandbox run`: ours, without proxy variables (which would configure an upstream
    proxy: proxy.http, proxy.https), with the canary, plus extra (config overrides)."""
    env = {k: v for k, v in os.environ.items()
           if k.upper() not in ('HTTP_PROXY', 'HTTPS_PROXY', 'SOCKS5_PROXY', 'ALL_PROXY', 'NO_PROXY')}
    env[CANARY_NAME] = CANARY_VALUE
    env.update(extra or {})
    return env


def run_network(code, language='python3', env=None, timeout=120, config=None):
    """`difysandbox run --network`; with config (flat keys: values), `difysandbox --config FILE run ...` with
    only that file (and the environment) as its configuration."""
    argv = command(language, ('--network', '--timeout', RUN_TIMEOUT))
    with tempfile.TemporaryDirectory(prefix='dsbt-egress-config-') as tmp:
        if config is not None:
            path = os.path.join(tmp, 'config.yaml')
            with open(path, 'w') as f:
                f.write(yaml_config(config))
            argv = [argv[0], '--config', path, *argv[1:]]
        proc = subprocess.run(argv, input=code.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=run_env(env), timeout=timeout)
    return parse_output(proc.stdout.decode('utf-8'), proc.stderr.decode('utf-8', 'replace'), proc.returncode)


def result_json(res):
    """The one JSON line the snippet printed."""
    assert res['result'] == 'ok' and res['exit_code'] == 0, res.show()
    try:
        return json.loads(res['stdout'])
    except ValueError:
        raise AssertionError('the snippet did not print JSON' + res.show())


def assert_denial_reported(res, host, reason):
    """The denial reached the journal (the service case) or, without one, the stderr of `difysandbox run`."""
    if os.environ.get('JOURNAL_STREAM') and shutil.which('journalctl'):
        deadline = time.monotonic() + 10
        while True:
            out = subprocess.run(['journalctl', '--no-pager', '-o', 'json', '--since', '-5min',
                                  'MESSAGE_ID=f127cd6b178f4d42ba2a22463bc2ec24', f'EGRESS_HOST={host}'],
                                 capture_output=True, text=True).stdout
            if any(reason in json.loads(line).get('EGRESS_REASON', '') for line in out.splitlines()):
                return
            assert time.monotonic() < deadline, f'no journal record of the denial of {host}: {reason}' + res.show()
            time.sleep(0.5)
    pattern = 'Egress denied for run '
    lines = [line for line in res.raw_stderr.splitlines() if pattern in line and host in line and reason in line]
    assert lines, f'the denial of {host} ({reason}) was not reported on stderr' + res.show()


# Asks the proxy directly (ignoring NO_PROXY, which sends the run's own loopback names around it).
RAW_CLIENT = r'''
import json, os, socket, urllib.parse
proxy = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])
def ask(head, read_all=True):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
    s.sendall(head.encode())
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        if not read_all and b'\r\n\r\n' in data:
            break
    s.close()
    status = data.split(b'\r\n', 1)[0].decode()
    return {'status': status, 'body': data.split(b'\r\n\r\n', 1)[-1].decode('utf-8', 'replace')}
'''


# ------------------------------------------------------------------------------------ allowed traffic

def test_python_requests_through_the_proxy(internet):
    before = internet.count()
    data = result_json(run_network(textwrap.dedent(f'''
        import json, os, requests
        r = requests.get('http://{INET_ADDRESS}:{HTTP_PORT}/requests?x=1', timeout=20,
                         headers={{'Proxy-Authorization': 'Basic c2VjcmV0', 'X-Test': 'kept'}})
        env = {{k: os.environ.get(k) for k in {list(PROXY_VARIABLES)!r}}}
        env.update({{k.lower(): os.environ.get(k.lower()) for k in {list(PROXY_VARIABLES)!r}}})
        print(json.dumps({{'status': r.status_code, 'seen': r.json(), 'env': env}}))
    ''')))
    assert data['status'] == 200, data
    seen = data['seen']
    # Forwarded in origin form, with Connection: close and without the client's proxy credentials.
    assert seen['line'] == 'GET /requests?x=1 HTTP/1.1', seen
    assert seen['headers'].get('Connection') == 'close', seen
    assert 'Proxy-Authorization' not in seen['headers'] and 'Proxy-Connection' not in seen['headers'], seen
    assert seen['headers'].get('X-Test') == 'kept', seen
    assert seen['headers'].get('Host') == f'{INET_ADDRESS}:{HTTP_PORT}', seen
    for name in PROXY_VARIABLES:  # NO_PROXY may be empty: the relay is the only way out
        assert data['env'][name] is not None, f'{name} is not set for the run: {data["env"]}'
        assert data['env'][name.lower()] == data['env'][name], data['env']
    for name in ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY'):
        assert data['env'][name].startswith('http://127.0.0.1:'), data['env']
    assert internet.count() == before + 1


def test_python_httpx_through_the_proxy(internet):
    before = internet.count()
    data = result_json(run_network(textwrap.dedent(f'''
        import json, httpx
        g = httpx.get('http://{INET_ADDRESS}:{HTTP_PORT}/httpx', timeout=20)
        p = httpx.post('http://{INET_ADDRESS}:{HTTP_PORT}/post', data={{'a': 'b c'}}, timeout=20)
        print(json.dumps({{'get': [g.status_code, g.json()], 'post': [p.status_code, p.json()]}}))
    ''')))
    assert data['get'][0] == 200 and data['get'][1]['line'] == 'GET /httpx HTTP/1.1', data
    assert data['post'][0] == 200 and data['post'][1]['body'] == 'a=b+c', data
    assert internet.count() == before + 2


def test_python_https_through_a_connect_tunnel(internet):
    before = internet.count()
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests, urllib3
        urllib3.disable_warnings()
        r = requests.get('https://{INET_ADDRESS}:{HTTPS_PORT}/tls', timeout=20, verify=False)
        print(json.dumps({{'status': r.status_code, 'seen': r.json()}}))
    ''')))
    assert data['status'] == 200 and data['seen']['tls'] is True, data
    assert data['seen']['line'] == 'GET /tls HTTP/1.1', data
    assert internet.count() == before + 1


def test_raw_connect_tunnel(internet):
    data = result_json(run_network(RAW_CLIENT + textwrap.dedent(f'''
        s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
        s.sendall(b'CONNECT {INET_ADDRESS}:{HTTP_PORT} HTTP/1.1\\r\\nHost: {INET_ADDRESS}:{HTTP_PORT}\\r\\n\\r\\n')
        answer = s.recv(4096)
        s.sendall(b'GET /tunnelled HTTP/1.0\\r\\n\\r\\n')
        data = b''
        while chunk := s.recv(65536):
            data += chunk
        print(json.dumps({{'answer': answer.decode(), 'through': data.split(b'\\r\\n\\r\\n', 1)[1].decode()}}))
    ''')))
    assert data['answer'] == 'HTTP/1.1 200 Connection established\r\n\r\n', data
    assert json.loads(data['through'])['line'] == 'GET /tunnelled HTTP/1.0', data


# ------------------------------------------------------------------------------------------ denials

def loopback_name():
    """A name other than "localhost" that resolves only to loopback on this host (the host name, or one of
    /etc/hosts), else "localhost"."""
    candidates = [socket.gethostname()]
    try:
        with open('/etc/hosts') as f:
            for line in f:
                fields = line.split('#', 1)[0].split()
                if fields and (fields[0].startswith('127.') or fields[0] == '::1'):
                    candidates += fields[1:]
    except OSError:
        pass
    for name in candidates:
        if name == 'localhost' or name.endswith('.localhost'):
            continue
        try:
            addresses = {a[4][0] for a in socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)}
        except OSError:
            continue
        if addresses and all(a.startswith('127.') or a == '::1' for a in addresses):
            return name
    return 'localhost'


# (id, how the snippet asks, URL or CONNECT target, host in the record, reason). {lo} and {own} are the
# ports of the test's listeners on 127.0.0.1 and on the host's own 198.51.100.1.
DENIED = [
    ('loopback', 'raw', 'http://127.0.0.1:{lo}/', '127.0.0.1',
     'loopback address 127.0.0.1 is not reachable from runs'),
    ('loopback-mapped', 'raw', 'http://[::ffff:127.0.0.1]:{lo}/', '::ffff:127.0.0.1',
     'loopback address 127.0.0.1 is not reachable from runs'),
    ('localhost', 'raw', 'http://localhost:{lo}/', 'localhost',
     "host 'localhost' names this host (loopback), which is not reachable from runs"),
    ('name-of-loopback', 'raw', 'http://{loopname}:{lo}/', '{loopname}', 'is not reachable from runs'),
    ('sandbox-port', 'raw', 'http://127.0.0.1:8194/', '127.0.0.1', 'loopback address 127.0.0.1'),
    ('metadata', 'requests', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254',
     'link-local address 169.254.169.254 (cloud metadata) is not reachable from runs'),
    ('private', 'requests', 'http://10.255.255.1/', '10.255.255.1',
     'private address 10.255.255.1 (RFC 1918) is not reachable from runs'),
    ('cgnat', 'requests', 'http://100.64.0.1/', '100.64.0.1', 'shared (CGNAT) address 100.64.0.1'),
    ('host-own-address', 'requests', 'http://198.51.100.1:{own}/', '198.51.100.1',
     "address 198.51.100.1 is one of this host's own addresses"),
    ('connect-loopback', 'connect', '127.0.0.1:{lo}', '127.0.0.1', 'loopback address 127.0.0.1'),
    ('connect-private', 'connect', '192.168.1.1:443', '192.168.1.1', 'private address 192.168.1.1 (RFC 1918)'),
]


@pytest.mark.parametrize('how,target,host,reason', [d[1:] for d in DENIED], ids=[d[0] for d in DENIED])
def test_denied_with_a_reason(internet, how, target, host, reason):
    values = {'lo': internet.loopback.port, 'own': internet.own.port, 'loopname': loopback_name()}
    target, host = target.format(**values), host.format(**values)
    before_lo, before_own, before_inet = internet.loopback.accepted, internet.own.accepted, internet.count()
    if how == 'raw':
        code = RAW_CLIENT + f'print(json.dumps(ask("GET {target} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")))\n'
    elif how == 'connect':
        code = RAW_CLIENT + f'print(json.dumps(ask("CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n")))\n'
    else:
        code = textwrap.dedent(f'''
            import json, requests
            r = requests.get({target!r}, timeout=20)
            print(json.dumps({{'status': f'HTTP/1.1 {{r.status_code}} {{r.reason}}', 'body': r.text}}))
        ''')
    res = run_network(code)
    data = result_json(res)
    assert data['status'] == 'HTTP/1.1 403 Forbidden', data
    assert data['body'].startswith('difysandbox egress proxy: ') and reason in data['body'], data
    assert_denial_reported(res, host, reason)
    # Refused before any connection: nothing reached the test's listeners, nor "the internet".
    assert internet.loopback.accepted == before_lo and internet.own.accepted == before_own
    assert internet.count() == before_inet


def test_denial_logging_is_rate_limited(internet):
    """Issue 12: one run logged 2,010 denials in 3.5 s. The first five are logged one by one, then one record
    says the rest are only counted; every request is still refused."""
    res = run_network(RAW_CLIENT + textwrap.dedent('''
        statuses = [ask('CONNECT 10.0.0.%d:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' % (i + 1))['status']
                    for i in range(40)]
        print(json.dumps({'denied': statuses.count('HTTP/1.1 403 Forbidden')}))
    '''))
    assert result_json(res)['denied'] == 40, res.show()
    if os.environ.get('JOURNAL_STREAM') and shutil.which('journalctl'):
        time.sleep(2)
        out = subprocess.run(['journalctl', '--no-pager', '-o', 'json', '--since', '-5min',
                              f'DIFYSANDBOX_RUN_ID={res["id"]}'], capture_output=True, text=True).stdout
        messages = [json.loads(line).get('MESSAGE', '') for line in out.splitlines()]
    else:
        messages = res.raw_stderr.splitlines()
    denied = [m for m in messages if 'Egress denied for run ' in m]
    summaries = [m for m in messages if 'further denials of this run are not logged' in m]
    assert len(denied) == 5, f'{len(denied)} denial records' + res.show()
    assert len(summaries) == 1 and 'Egress denied 6 times' in summaries[0], res.show()


def relay_cpu_usec(runner_pid):
    """CPU time (utime + stime) of the egress relay under a `difysandbox run`: its child running as nobody."""
    ticks = os.sysconf('SC_CLK_TCK')
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            with open(f'/proc/{entry}/status') as f:
                uid = int(f.read().split('\nUid:', 1)[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if int(fields[1]) == runner_pid and uid == 65534:
            return (int(fields[11]) + int(fields[12])) * 1000000 // ticks
    return None


def test_relay_cpu_is_charged_to_the_run(internet):
    """Issue 12: the relay's CPU is charged to the run. The run makes its relay work (denied CONNECTs),
    reports its own CPU time and waits; the test reads the relay's; the run's cpu_ms covers both."""
    code = RAW_CLIENT + textwrap.dedent('''
        import resource, sys, time
        for i in range(1500):
            ask('CONNECT 10.0.0.%d:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' % (i % 250 + 1))
        own = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({'own_usec': int((own.ru_utime + own.ru_stime) * 1e6)}), flush=True)
        time.sleep(3)  # the test samples the relay now
    ''')
    argv = command('python3', ('--network', '--timeout', '60'))
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=run_env())
    proc.stdin.write(code.encode())
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again
    relay, deadline = None, time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        sample = relay_cpu_usec(proc.pid)
        relay = sample if sample is not None else relay
        time.sleep(0.1)
    out, err = proc.communicate(timeout=60)
    res = parse_output(out.decode(), err.decode('utf-8', 'replace'), proc.returncode)
    own = result_json(res)['own_usec']
    assert relay is not None, 'the relay process was never seen' + res.show()
    tick = 1000000 // os.sysconf('SC_CLK_TCK')  # /proc counts in ticks: the relay's figure is this coarse
    if relay < 3 * tick:
        pytest.skip(f'the relay used only {relay} us of CPU: too little to tell')
    charged = res['cpu_ms'] * 1000
    assert charged >= own + relay - 2 * tick, (
        f'cpu_ms {res["cpu_ms"]}: the run itself used {own} us and its relay {relay} us' + res.show())


def test_https_to_a_denied_destination_fails_in_the_client(internet):
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests
        try:
            requests.get('https://127.0.0.1:{internet.loopback.port}/', timeout=20, verify=False)
            print(json.dumps({{'error': None}}))
        except requests.exceptions.ProxyError as e:
            print(json.dumps({{'error': str(e)}}))
    ''')))
    assert data['error'] and '403' in data['error'], data
    assert internet.loopback.accepted == 0


def test_raw_tcp_ignoring_the_proxy_reaches_nothing(internet):
    before = internet.count()
    data = result_json(run_network(textwrap.dedent(f'''
        import errno, json, socket
        try:  # the interfaces of the run's network namespace
            with open('/proc/net/dev') as f:
                out = {{'interfaces': sorted(line.split(':')[0].strip() for line in f.readlines()[2:])}}
        except OSError:
            out = {{'interfaces': None}}
        for address, port in (('{INET_ADDRESS}', {HTTP_PORT}), ('{HOST_ADDRESS}', {internet.own.port}),
                              ('169.254.169.254', 80), ('8.8.8.8', 53)):
            try:
                socket.create_connection((address, port), timeout=5).close()
                out[address] = 'connected'
            except OSError as e:
                out[address] = errno.errorcode.get(e.errno, str(e))
        print(json.dumps(out))
    ''')))
    assert data['interfaces'] in (['lo'], None), data
    for address in (INET_ADDRESS, HOST_ADDRESS, '169.254.169.254', '8.8.8.8'):
        assert data[address] == 'ENETUNREACH', data
    assert internet.count() == before
    assert internet.own.accepted == 0


# -------------------------------------------------------------------------------- the metadata address

METADATA_ADDRESS = '169.254.169.254'
METADATA_COUNT_PORT = 8081

# Inside the "internet" namespace: a TCP listener on 169.254.169.254:80 that counts every connection it accepts
# (and answers like a metadata service), and tells the count on 198.51.100.2:8081.
METADATA_LISTENER = r'''
import socket, sys, threading
count = 0
def serve():
    global count
    s = socket.create_server((sys.argv[1], 80))
    while True:
        conn, _ = s.accept()
        count += 1
        try:
            conn.settimeout(5)
            conn.recv(65536)
            conn.sendall(b'HTTP/1.0 200 OK\r\nContent-Length: 13\r\n\r\nami-id\nsecret')
        except OSError:
            pass
        conn.close()
threading.Thread(target=serve, daemon=True).start()
counter = socket.create_server((sys.argv[2], int(sys.argv[3])))
while True:
    conn, _ = counter.accept()
    conn.sendall(str(count).encode())
    conn.close()
'''

# What the relay's requests would look like: a process of the relay's UID on the host, in the host's network
# namespace. Prints the answer of the metadata listener.
AS_RELAY_CLIENT = r'''
import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=10)
s.sendall(b'GET /latest/meta-data/ HTTP/1.0\r\n\r\n')
data = b''
while chunk := s.recv(65536):
    data += chunk
print(data.split(b'\r\n\r\n', 1)[1].decode())
'''


class Metadata:
    """169.254.169.254 made real: the address on the "internet" namespace's end of the veth, a counting listener on
    port 80 there, and a host route to it over the veth. The route is in a routing table of the test's own, used
    only by sockets of the relay's UID (an `ip rule` with a uidrange): the host's own traffic to a cloud metadata
    service, if it has one, is not taken away while the test runs. The relay runs as that UID in the host's network
    namespace, so it is exactly what the route serves."""

    def __init__(self, inet):
        self.inet = inet
        self.table = None
        self.rule = None
        self.route = None
        self.listener = None

    def count(self):
        with socket.create_connection((INET_ADDRESS, METADATA_COUNT_PORT), timeout=10) as s:
            data = b''
            while chunk := s.recv(64):
                data += chunk
        return int(data)

    def as_relay(self):
        """Asks the listener from the host as the relay's UID would; its answer."""
        return subprocess.run(['/usr/bin/python3', '-I', '-c', AS_RELAY_CLIENT, METADATA_ADDRESS], user=RELAY_UID,
                              group=RELAY_UID, extra_groups=[], capture_output=True, text=True, timeout=30)

    def start(self):
        inet = self.inet
        ip('-n', inet.netns, 'addr', 'add', f'{METADATA_ADDRESS}/32', 'dev', inet.ns_link)
        script = os.path.join(inet.tmp, 'metadata.py')
        with open(script, 'w') as f:
            f.write(METADATA_LISTENER)
        self.listener = subprocess.Popen(
            ['ip', 'netns', 'exec', inet.netns, '/usr/bin/python3', script, METADATA_ADDRESS, INET_ADDRESS,
             str(METADATA_COUNT_PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        # A free routing table and rule priority (the same number), with a route nobody else has.
        used = set(re.findall(r'^(\d+):', ip('rule', 'show').stdout, re.M))
        for n in range(27100, 27200):
            if str(n) not in used and not ip('route', 'show', 'table', str(n), check=False).stdout.strip():
                self.table = str(n)
                break
        else:
            pytest.fail('no free routing table / rule priority in 27100-27199')
        self.route = ['route', 'add', f'{METADATA_ADDRESS}/32', 'via', INET_ADDRESS, 'dev', inet.host_link,
                      'table', self.table]
        ip(*self.route)
        self.rule = ['rule', 'add', 'priority', self.table, 'to', f'{METADATA_ADDRESS}/32',
                     'uidrange', f'{RELAY_UID}-{RELAY_UID}', 'lookup', self.table]
        ip(*self.rule)
        got = ip('-4', 'route', 'get', METADATA_ADDRESS, 'uid', str(RELAY_UID)).stdout
        assert f'dev {inet.host_link}' in got, f'the route for the relay UID does not take the veth: {got}'

        deadline = time.monotonic() + 20
        while True:
            try:
                self.count()
                break
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        # The listener is reachable the way the relay would go: else a count of zero would prove nothing.
        reached = self.as_relay()
        assert reached.returncode == 0 and reached.stdout == 'ami-id\nsecret\n', \
            (f'the metadata listener is not reachable from the host as UID {RELAY_UID} over the test route '
             f'(rp_filter?): {reached}')
        assert self.count() == 1

    def stop(self):
        if self.rule:
            ip(*['rule', 'del', *self.rule[2:]], check=False)
        if self.route:
            ip(*['route', 'del', *self.route[2:]], check=False)
        if self.listener:
            self.listener.kill()
            self.listener.wait(timeout=10)
        if self.table:  # anything left in the table would be the test's: make sure it is empty
            ip('route', 'flush', 'table', self.table, check=False)
        # The address goes with the namespace (the internet fixture's finalizer); take it away now all the same.
        ip('-n', self.inet.netns, 'addr', 'del', f'{METADATA_ADDRESS}/32', 'dev', self.inet.ns_link, check=False)


@pytest.fixture
def metadata(request, internet):
    meta = Metadata(internet)
    request.addfinalizer(meta.stop)  # first: whatever start() made is removed, even if it fails halfway
    meta.start()
    return meta


def test_metadata_address_with_a_real_listener(internet, metadata):
    before, before_inet = metadata.count(), internet.count()
    res = run_network(textwrap.dedent(f'''
        import json, requests
        r = requests.get('http://{METADATA_ADDRESS}/latest/meta-data/', timeout=20)
        print(json.dumps({{'status': r.status_code, 'body': r.text}}))
    '''))
    data = result_json(res)
    reason = f'link-local address {METADATA_ADDRESS} (cloud metadata) is not reachable from runs'
    assert data['status'] == 403 and data['body'].startswith('difysandbox egress proxy: '), data
    assert reason in data['body'] and 'secret' not in data['body'], data
    assert_denial_reported(res, METADATA_ADDRESS, reason)
    assert metadata.count() == before, 'the relay connected to the metadata listener'
    assert internet.count() == before_inet


# --------------------------------------------------------------------------------------------- Node.js

def test_the_shim_loads_no_fetch_implementation_until_fetch_is_called():
    """Touching Response (or Headers, Request) at start loads Node's fetch implementation (undici): about
    75 ms of CPU in every node run with network, most of what such a run cost over one without (issue 25).
    The shim leaves those globals alone until fetch() is called; a fetch() that fails still works. The
    global fetch starts as the bootstrap's stand-in, which loads the shim: a reference the code took
    before is proxied, and so is every later call."""
    data = result_json(run_network(textwrap.dedent('''
        const loaded = () => process.moduleLoadList.some((m) => m.includes('undici'));
        const out = { atStart: loaded(), proxied: !!process.env.HTTP_PROXY };
        const early = fetch;
        const get = (f) => f('http://169.254.169.254/').then((r) => r.status, (e) => String(e));
        get(early).then((status) => {
          out.status = status;
          out.afterFetch = loaded();
          return get(fetch);
        }).then((again) => {
          out.again = again;
          console.log(JSON.stringify(out));
        });
    '''), language='nodejs'))
    assert data == {'atStart': False, 'proxied': True, 'status': 403, 'afterFetch': True, 'again': 403}, data


# How a client reaches the proxy's refusals: http answers 403, https fails its CONNECT with the 403 line.
NODE_DENIED_GETS = textwrap.dedent('''
    const denied = (http, https) => Promise.all([
      new Promise((resolve) => http.get('http://169.254.169.254/', (r) => { r.resume(); resolve(r.statusCode); })
        .on('error', (e) => resolve(e.code || String(e)))),
      new Promise((resolve) => https.get('https://10.1.2.3/', () => resolve('reached'))
        .on('error', (e) => resolve(e.message))),
    ]);
''')


def assert_denied_by_the_proxy(answers):
    assert answers[0] == 403, answers
    assert '403' in answers[1] and 'private address 10.1.2.3 (RFC 1918)' in answers[1], answers


def test_the_shim_loads_http_and_https_when_the_code_first_asks_for_them():
    """Loading http, https (with tls) and zlib at start cost about 13 ms of CPU in every node run with
    network, a fifth of a bare node, and loading the shim itself 1-1.5 ms (issue 25). The shim is loaded,
    and patches each module, when the code first asks for one; whichever way the code loads it, its
    requests still go through the proxy (a direct connect would fail with ENETUNREACH, not meet the
    proxy's 403)."""
    loaded = ("const loaded = () => ['http', 'https', 'tls', 'zlib'].filter((m) => process.moduleLoadList.includes(`NativeModule ${m}`))\n"
              "  .concat(Object.keys(require.cache).filter((f) => f.endsWith('/nodejs-proxy.js')));\n")
    data = result_json(run_network(NODE_DENIED_GETS + loaded + textwrap.dedent('''
        const atStart = loaded();
        // Once both are patched the hook steps aside: a failed require()'s stack no longer passes it.
        const shimInStack = () => { try { require('no-such-module'); } catch (e) { return e.stack.includes('difysandboxProxyHook'); } };
        const hookedBefore = shimInStack();
        denied(require('node:http'), require('https')).then((answers) => {
          console.log(JSON.stringify({ atStart, answers, after: loaded(), hookedBefore, hookedAfter: shimInStack() }));
        });
    '''), language='nodejs'))
    assert data['atStart'] == [] and data['after'][:3] == ['http', 'https', 'tls'], data
    assert data['after'][-1] == '/usr/lib/difysandbox/nodejs-proxy.js', data
    assert data['hookedBefore'] is True and data['hookedAfter'] is False, data
    assert_denied_by_the_proxy(data['answers'])

    # process.getBuiltinModule() (Node.js 20.16 and later) hands out the same modules without require().
    data = result_json(run_network(NODE_DENIED_GETS + textwrap.dedent('''
        if (typeof process.getBuiltinModule !== 'function') {
          console.log(JSON.stringify({ absent: true }));
        } else {
          denied(process.getBuiltinModule('http'), process.getBuiltinModule('node:https'))
            .then((answers) => console.log(JSON.stringify({ answers })));
        }
    '''), language='nodejs'))
    if 'absent' not in data:
        assert_denied_by_the_proxy(data['answers'])

    # import() reaches neither hook: the bootstrap loads both for code that mentions import.
    data = result_json(run_network(NODE_DENIED_GETS + textwrap.dedent('''
        Promise.all([import('node:http'), import('https')])
          .then(([http, https]) => denied(http.default, https.default))
          .then((answers) => console.log(JSON.stringify({ answers })));
    '''), language='nodejs'))
    assert_denied_by_the_proxy(data['answers'])


def test_node_fetch_and_http_get_through_the_shim(internet):
    before = internet.count()
    data = result_json(run_network(textwrap.dedent(f'''
        const http = require('http'), https = require('https'), net = require('net');
        const get = (mod, url, opts = {{}}) => new Promise((resolve, reject) => {{
          mod.get(url, opts, (r) => {{ let d = ''; r.on('data', (c) => d += c); r.on('end', () => resolve([r.statusCode, d])); }})
            .on('error', reject);
        }});
        (async () => {{
          const out = {{}};
          out.httpGet = await get(http, 'http://{INET_ADDRESS}:{HTTP_PORT}/node-http-get');
          out.httpsGet = await get(https, 'https://{INET_ADDRESS}:{HTTPS_PORT}/node-https-get', {{ rejectUnauthorized: false }});
          let r = await fetch('http://{INET_ADDRESS}:{HTTP_PORT}/node-fetch?x=1');
          out.fetch = [r.status, await r.json()];
          r = await fetch('http://{INET_ADDRESS}:{HTTP_PORT}/post', {{ method: 'POST', body: new URLSearchParams({{ a: 'b c' }}) }});
          out.post = [r.status, await r.json()];
          r = await fetch('http://169.254.169.254/latest/meta-data/');
          out.denied = [r.status, await r.text()];
          out.deniedHttps = await get(https, 'https://10.1.2.3/').then(() => 'reached', (e) => e.message);
          out.raw = await new Promise((resolve) => {{
            const s = net.connect({{ host: '{INET_ADDRESS}', port: {HTTP_PORT} }});
            s.on('connect', () => {{ s.destroy(); resolve('connected'); }});
            s.on('error', (e) => resolve(e.code));
          }});
          console.log(JSON.stringify(out));
        }})().catch((e) => {{ console.log(JSON.stringify({{ failed: String(e && e.stack || e) }})); }});
    '''), language='nodejs'))
    assert 'failed' not in data, data
    assert data['httpGet'][0] == 200 and json.loads(data['httpGet'][1])['line'] == 'GET /node-http-get HTTP/1.1', data
    assert data['httpsGet'][0] == 200 and json.loads(data['httpsGet'][1])['tls'] is True, data
    assert data['fetch'][0] == 200 and data['fetch'][1]['line'] == 'GET /node-fetch?x=1 HTTP/1.1', data
    assert data['post'][0] == 200 and data['post'][1]['body'] == 'a=b+c', data
    assert data['denied'][0] == 403 and 'link-local address 169.254.169.254 (cloud metadata)' in data['denied'][1], data
    assert '403' in data['deniedHttps'] and 'private address 10.1.2.3 (RFC 1918)' in data['deniedHttps'], data
    assert data['raw'] == 'ENETUNREACH', data
    assert internet.count() == before + 4


def test_node_without_network_code_is_unaffected(internet):
    res = run_network('console.log(JSON.stringify({sum: [1, 2, 3].reduce((a, b) => a + b), fetch: typeof fetch}))',
                      language='nodejs')
    assert result_json(res) == {'sum': 6, 'fetch': 'function'}, res.show()


# ----------------------------------------------------------------------------------------------- limits

def test_connection_limit(internet):
    data = result_json(run_network(RAW_CLIENT + textwrap.dedent(f'''
        tunnels, answers = [], []
        for _ in range(3):
            s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
            s.sendall(b'CONNECT {INET_ADDRESS}:{HTTP_PORT} HTTP/1.1\\r\\n\\r\\n')
            answers.append(s.recv(4096).decode())
            tunnels.append(s)
        print(json.dumps(answers))
    '''), env={'DIFYSANDBOX_EGRESS_MAX_CONNECTIONS': '2'}))
    assert data[0].startswith('HTTP/1.1 200 ') and data[1].startswith('HTTP/1.1 200 '), data
    assert data[2].startswith('HTTP/1.1 503 '), data
    assert 'too many connections (egress_max_connections 2)' in data[2], data


def test_byte_limit(internet):
    data = result_json(run_network(RAW_CLIENT + textwrap.dedent(f'''
        first = ask('GET http://{INET_ADDRESS}:{HTTP_PORT}/big/1000000 HTTP/1.1\\r\\n\\r\\n')
        then = ask('GET http://{INET_ADDRESS}:{HTTP_PORT}/small HTTP/1.1\\r\\n\\r\\n')
        print(json.dumps({{'got': len(first['body']), 'then': then}}))
    '''), env={'DIFYSANDBOX_EGRESS_MAX_BYTES': '64K'}))
    assert data['got'] < 64 * 1024, data
    assert data['then']['status'] == 'HTTP/1.1 503 Service Unavailable', data
    assert 'egress byte budget' in data['then']['body'], data


def test_idle_timeout(internet):
    data = result_json(run_network(RAW_CLIENT + textwrap.dedent(f'''
        import time
        s = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
        s.sendall(b'CONNECT {INET_ADDRESS}:{HTTP_PORT} HTTP/1.1\\r\\n\\r\\n')
        answer = s.recv(4096).decode()
        start = time.monotonic()
        closed = s.recv(4096)  # the server waits for a request that never comes
        print(json.dumps({{'answer': answer, 'closed': closed.decode(), 'after': time.monotonic() - start}}))
    '''), env={'DIFYSANDBOX_EGRESS_IDLE_TIMEOUT': '1'}))
    assert data['answer'].startswith('HTTP/1.1 200 '), data
    assert data['closed'] == '' and 0.5 < data['after'] < 5, data


def test_deny_list_and_allow_list(internet):
    res = run_network(textwrap.dedent(f'''
        import json, requests
        r = requests.get('http://{INET_ADDRESS}:{HTTP_PORT}/', timeout=20)
        print(json.dumps({{'status': r.status_code, 'body': r.text}}))
    '''), env={'DIFYSANDBOX_EGRESS_DENY': f':{HTTP_PORT}'})
    data = result_json(res)
    assert data['status'] == 403 and f"port {HTTP_PORT} is denied (egress_deny ':{HTTP_PORT}')" in data['body'], data
    assert_denial_reported(res, INET_ADDRESS, f'port {HTTP_PORT} is denied')

    # egress_allow opens what the built-in rules refuse: here the host's own address.
    before = internet.own.accepted
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests
        r = requests.get('http://{HOST_ADDRESS}:{internet.own.port}/', timeout=20)
        print(json.dumps({{'status': r.status_code, 'body': r.text}}))
    '''), env={'DIFYSANDBOX_EGRESS_ALLOW': HOST_ADDRESS}))
    assert data == {'status': 200, 'body': 'reached'}, data
    assert internet.own.accepted == before + 1


# ------------------------------------------------------------------------------------- chained proxies

SOCKS_NAMES = {'inet.test': INET_ADDRESS}  # what the test's SOCKS5 proxy resolves itself (the relay must not)


def recv_exactly(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f'closed after {len(data)} of {n} bytes')
        data += chunk
    return data


def splice(a, b):
    """Copies both ways between two sockets until both directions have ended, then closes them."""
    def copy(src, dst):
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    other = threading.Thread(target=copy, args=(b, a), daemon=True)
    other.start()
    copy(a, b)
    other.join(30)
    a.close()
    b.close()


class UpstreamProxy:
    """An upstream proxy of the test on 127.0.0.1:<free port>, as proxy.http/proxy.https (kind 'http': absolute-form
    requests, forwarded in origin form, and CONNECT, tunnelled) or proxy.socks5 (kind 'socks5': no authentication,
    CONNECT only). It records what it is asked (`seen`) and the connections it accepts, and goes on only to "the
    internet" (198.51.100.2): anything else gets a refusal, so that nothing but the test's own namespace is ever
    connected to."""

    def __init__(self, kind):
        self.kind = kind
        self.sock = socket.create_server(('127.0.0.1', 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.seen = []
        self.errors = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        conn.settimeout(20)
        try:
            (self.socks5 if self.kind == 'socks5' else self.http)(conn)
        except (OSError, ValueError) as e:
            self.errors.append(repr(e))
            conn.close()

    def http(self, conn):
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError(f'closed before a whole request head: {head!r}')
            head += chunk
        head, rest = head.split(b'\r\n\r\n', 1)
        line, *fields = head.decode('latin-1').split('\r\n')
        self.seen.append({'line': line, 'headers': [tuple(f.split(': ', 1)) for f in fields]})
        method, target, version = line.split(' ')
        if method == 'CONNECT':
            host, port = target.rsplit(':', 1)
            destination, forward = (host.strip('[]'), int(port)), rest
        else:
            url = urllib.parse.urlsplit(target)
            destination = (url.hostname, url.port or 80)
            kept = [f for f in fields if not f.lower().startswith('proxy-authorization:')]
            path = url.path + ('?' + url.query if url.query else '')
            forward = '\r\n'.join([f'{method} {path} {version}', *kept, '', '']).encode('latin-1') + rest
        if destination[0] != INET_ADDRESS:
            conn.sendall(b'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
            conn.close()
            return
        upstream = socket.create_connection(destination, timeout=20)
        if method == 'CONNECT':
            conn.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
        upstream.sendall(forward)
        splice(conn, upstream)

    def socks5(self, conn):
        version, n = recv_exactly(conn, 2)
        methods = list(recv_exactly(conn, n))
        conn.sendall(b'\x05\x00')  # no authentication
        version, cmd, _, atyp = recv_exactly(conn, 4)
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, recv_exactly(conn, 4))
        elif atyp == 3:
            host = recv_exactly(conn, recv_exactly(conn, 1)[0]).decode('latin-1')
        else:
            host = socket.inet_ntop(socket.AF_INET6, recv_exactly(conn, 16))
        port = struct.unpack('>H', recv_exactly(conn, 2))[0]
        self.seen.append({'version': version, 'methods': methods, 'cmd': cmd, 'atyp': atyp, 'host': host,
                          'port': port})
        address = SOCKS_NAMES.get(host, host)
        if version != 5 or cmd != 1 or address != INET_ADDRESS:
            conn.sendall(b'\x05\x02\x00\x01' + bytes(6))  # connection not allowed by ruleset
            conn.close()
            return
        upstream = socket.create_connection((address, port), timeout=20)
        conn.sendall(b'\x05\x00\x00\x01' + socket.inet_aton(address) + struct.pack('>H', port))
        splice(conn, upstream)

    def close(self):
        self.sock.close()


@pytest.fixture
def upstream_http():
    proxy = UpstreamProxy('http')
    yield proxy
    proxy.close()


@pytest.fixture
def upstream_socks5():
    proxy = UpstreamProxy('socks5')
    yield proxy
    proxy.close()


def headers_named(seen, name):
    return [v for k, v in seen['headers'] if k.lower() == name.lower()]


def test_chains_to_the_configured_upstream_http_proxy(internet, upstream_http):
    before = internet.count()
    config = {'proxy.http': f'http://alice:s3cr%40t@127.0.0.1:{upstream_http.port}'}  # %40: an @ in the password
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests, urllib3
        urllib3.disable_warnings()
        r = requests.get('http://{INET_ADDRESS}:{HTTP_PORT}/chained?x=1', timeout=20,
                         headers={{'Proxy-Authorization': 'Basic c2VjcmV0', 'X-Test': 'kept'}})
        t = requests.get('https://{INET_ADDRESS}:{HTTPS_PORT}/not-chained', timeout=20, verify=False)
        print(json.dumps({{'status': r.status_code, 'seen': r.json(), 'tls': [t.status_code, t.json()]}}))
    '''), config=config))
    # The answer came back through the test's proxy, which forwarded the request to "the internet".
    assert data['status'] == 200, data
    assert data['seen']['line'] == 'GET /chained?x=1 HTTP/1.1', data
    assert data['seen']['headers'].get('X-Test') == 'kept', data
    assert upstream_http.errors == [], upstream_http.errors
    assert len(upstream_http.seen) == 1, upstream_http.seen
    seen = upstream_http.seen[0]
    assert seen['line'] == f'GET http://{INET_ADDRESS}:{HTTP_PORT}/chained?x=1 HTTP/1.1', seen
    assert headers_named(seen, 'Host') == [f'{INET_ADDRESS}:{HTTP_PORT}'], seen
    # The relay's credentials for the upstream proxy (from the URL), never the run's own.
    assert headers_named(seen, 'Proxy-Authorization') == ['Basic ' + base64.b64encode(b'alice:s3cr@t').decode()], seen
    assert headers_named(seen, 'Connection') == ['close'], seen
    # proxy.http is for plain requests only: without proxy.https, CONNECT goes straight out.
    assert data['tls'][0] == 200 and data['tls'][1]['line'] == 'GET /not-chained HTTP/1.1', data
    assert upstream_http.accepted == 1
    assert internet.count() == before + 2

    # A destination the policy refuses is refused by the relay itself: the upstream proxy never hears of it.
    res = run_network(textwrap.dedent('''
        import json, requests
        r = requests.get('http://10.0.0.1/latest', timeout=20)
        print(json.dumps({'status': r.status_code, 'body': r.text}))
    '''), config=config)
    data = result_json(res)
    assert data['status'] == 403, data
    assert 'private address 10.0.0.1 (RFC 1918) is not reachable from runs' in data['body'], data
    assert_denial_reported(res, '10.0.0.1', 'private address 10.0.0.1 (RFC 1918)')
    assert upstream_http.accepted == 1 and len(upstream_http.seen) == 1, upstream_http.seen
    assert internet.count() == before + 2


def test_chains_connect_to_the_configured_upstream_https_proxy(internet, upstream_http):
    before = internet.count()
    env = {'HTTPS_PROXY': f'http://127.0.0.1:{upstream_http.port}'}  # proxy.https, by its environment override
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests, urllib3
        urllib3.disable_warnings()
        r = requests.get('https://{INET_ADDRESS}:{HTTPS_PORT}/chained-tls', timeout=20, verify=False)
        p = requests.get('http://{INET_ADDRESS}:{HTTP_PORT}/not-chained', timeout=20)
        print(json.dumps({{'status': r.status_code, 'seen': r.json(), 'plain': [p.status_code, p.json()]}}))
    '''), env=env))
    assert data['status'] == 200 and data['seen']['tls'] is True, data
    assert data['seen']['line'] == 'GET /chained-tls HTTP/1.1', data
    assert upstream_http.errors == [], upstream_http.errors
    assert len(upstream_http.seen) == 1, upstream_http.seen
    seen = upstream_http.seen[0]
    assert seen['line'] == f'CONNECT {INET_ADDRESS}:{HTTPS_PORT} HTTP/1.1', seen
    assert headers_named(seen, 'Host') == [f'{INET_ADDRESS}:{HTTPS_PORT}'], seen
    assert headers_named(seen, 'Proxy-Authorization') == [], seen  # no user in the URL
    # proxy.https is for CONNECT only: a plain request goes straight out.
    assert data['plain'][0] == 200 and data['plain'][1]['line'] == 'GET /not-chained HTTP/1.1', data
    assert upstream_http.accepted == 1
    assert internet.count() == before + 2

    connect = 'CONNECT 10.0.0.1:443 HTTP/1.1\\r\\nHost: 10.0.0.1:443\\r\\n\\r\\n'
    res = run_network(RAW_CLIENT + f'print(json.dumps(ask("{connect}")))\n', env=env)
    data = result_json(res)
    assert data['status'] == 'HTTP/1.1 403 Forbidden', data
    assert 'private address 10.0.0.1 (RFC 1918) is not reachable from runs' in data['body'], data
    assert_denial_reported(res, '10.0.0.1', 'private address 10.0.0.1 (RFC 1918)')
    assert upstream_http.accepted == 1 and len(upstream_http.seen) == 1, upstream_http.seen
    assert internet.count() == before + 2


def test_chains_to_the_configured_upstream_socks5_proxy(internet, upstream_socks5):
    before = internet.count()
    config = {'proxy.socks5': f'socks5h://127.0.0.1:{upstream_socks5.port}'}
    # inet.test resolves nowhere but in the test's SOCKS5 proxy: the relay must hand the name on unresolved.
    data = result_json(run_network(textwrap.dedent(f'''
        import json, requests, urllib3
        urllib3.disable_warnings()
        p = requests.get('http://inet.test:{HTTP_PORT}/socks-plain', timeout=20)
        t = requests.get('https://{INET_ADDRESS}:{HTTPS_PORT}/socks-tls', timeout=20, verify=False)
        d = requests.get('http://10.0.0.1/', timeout=20)
        print(json.dumps({{'plain': [p.status_code, p.json()], 'tls': [t.status_code, t.json()],
                           'denied': [d.status_code, d.text]}}))
    '''), config=config))
    assert data['plain'][0] == 200, data
    assert data['plain'][1]['line'] == 'GET /socks-plain HTTP/1.1', data  # origin form: SOCKS5 is a tunnel
    assert data['plain'][1]['headers'].get('Host') == f'inet.test:{HTTP_PORT}', data
    assert data['tls'][0] == 200 and data['tls'][1]['tls'] is True, data
    assert data['tls'][1]['line'] == 'GET /socks-tls HTTP/1.1', data
    assert data['denied'][0] == 403, data
    assert 'private address 10.0.0.1 (RFC 1918) is not reachable from runs' in data['denied'][1], data
    assert upstream_socks5.errors == [], upstream_socks5.errors
    common = {'version': 5, 'methods': [0], 'cmd': 1}
    assert upstream_socks5.seen == [
        {**common, 'atyp': 3, 'host': 'inet.test', 'port': HTTP_PORT},  # a name as a name
        {**common, 'atyp': 1, 'host': INET_ADDRESS, 'port': HTTPS_PORT},  # an IP literal as itself
    ], upstream_socks5.seen
    assert upstream_socks5.accepted == 2  # and nothing for 10.0.0.1
    assert internet.count() == before + 2


# -------------------------------------------------------------------------------------- the relay's life

def relay_processes(ancestor=None):
    """PIDs of relays: difysandbox processes running as nobody (below ancestor, when given)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/status') as f:
                status = f.read()
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                argv0 = f.read().split(b'\0', 1)[0].decode('utf-8', 'replace')
        except OSError:
            continue
        uid = re.search(r'^Uid:\s+(\d+)', status, re.M)
        ppid = re.search(r'^PPid:\s+(\d+)', status, re.M)
        if uid and int(uid.group(1)) == RELAY_UID and os.path.basename(argv0) == 'difysandbox':
            if ancestor is None or int(ppid.group(1)) == ancestor:
                found.append(int(entry))
    return found


# A run's first connection to its proxy starts its relay (issue 25, item 3): this one connects, then waits.
CONNECT_THEN_WAIT = (b'import os, socket, time, urllib.parse\n'
                     b'p = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])\n'
                     b's = socket.create_connection((p.hostname, p.port), timeout=20)\n'
                     b'time.sleep(%d)\nprint("done")\n')


def test_a_run_that_never_connects_has_no_relay(internet):
    """Most code nodes never use the network: their run costs no relay process (a fork, an exit and a
    fifth of the runner's CPU per run, issue 25). The same run connecting gets one (the test below)."""
    before = set(relay_processes())
    proc = subprocess.Popen(command('python3', ('--network', '--timeout', RUN_TIMEOUT)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env())
    proc.stdin.write(b'import os, time\nprint(os.environ["HTTP_PROXY"])\ntime.sleep(3)\n')
    proc.stdin.close()
    proc.stdin = None
    seen, polls = [], 0
    while proc.poll() is None:
        seen += relay_processes(ancestor=proc.pid)
        polls += 1
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    res = parse_output(out.decode(), err.decode('utf-8', 'replace'), proc.returncode)
    assert res['stdout'] == 'http://127.0.0.1:3128\n', res.show()  # a run with network, its proxy set
    assert polls >= 10, f'the run ended before the test could look ({polls} looks)' + res.show()
    assert seen == [], f'relays {seen} ran for a run that never connected' + res.show()
    assert set(relay_processes()) - before == set(), 'a relay outlived its run' + res.show()


def test_relay_lives_as_long_as_the_run(internet):
    before = set(relay_processes())
    proc = subprocess.Popen(command('python3', ('--network', '--timeout', RUN_TIMEOUT)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env())
    proc.stdin.write(CONNECT_THEN_WAIT % 3)
    proc.stdin.close()
    proc.stdin = None
    seen = []
    deadline = time.monotonic() + 20
    while not seen and proc.poll() is None and time.monotonic() < deadline:
        seen = relay_processes(ancestor=proc.pid)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    res = parse_output(out.decode(), err.decode('utf-8', 'replace'), proc.returncode)
    assert res['stdout'] == 'done\n', res.show()
    assert seen, 'no relay process (nobody, child of difysandbox run) was seen while the run went on' + res.show()
    time.sleep(0.2)
    assert set(relay_processes()) - before == set(), 'a relay outlived its run' + res.show()


def test_relay_dies_with_a_killed_worker(internet):
    proc = subprocess.Popen(command('python3', ('--network', '--timeout', RUN_TIMEOUT)), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=run_env())
    proc.stdin.write(CONNECT_THEN_WAIT % 20)
    proc.stdin.close()
    relays = []
    deadline = time.monotonic() + 20
    while not relays and time.monotonic() < deadline:
        relays = relay_processes(ancestor=proc.pid)
        time.sleep(0.05)
    assert relays, 'no relay process was seen'
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while any(os.path.exists(f'/proc/{pid}') and pid in relay_processes() for pid in relays):
        assert time.monotonic() < deadline, f'relays {relays} survived the SIGKILL of their worker'
        time.sleep(0.05)


# ------------------------------------------------------------------------------------ cleanup after many runs

LEAK_RUNS = 1000


class Proc:
    """One host process as /proc shows it."""

    def __init__(self, pid):
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        with open(f'/proc/{pid}/status') as f:
            status = f.read()
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            self.argv = [a.decode('utf-8', 'replace') for a in f.read().split(b'\0')[:-1]]
        self.pid, self.ppid, self.start, self.state = pid, int(fields[1]), int(fields[19]), fields[0]
        self.uids = [int(u) for u in re.search(r'^Uid:\s+(.*)$', status, re.M).group(1).split()]
        try:
            self.netns = os.readlink(f'/proc/{pid}/ns/net')
        except OSError:
            self.netns = None  # a zombie: it still counts as a process
        self.key = (pid, self.start)

    @property
    def run(self):
        return any(UID_MIN <= u <= UID_MAX for u in self.uids)

    @property
    def relay(self):
        return self.uids[0] == RELAY_UID and bool(self.argv) and \
            os.path.basename(self.argv[0]) in ('difysandbox', 'difysandbox-worker')

    def __repr__(self):
        return (f'pid {self.pid} ppid {self.ppid} uids {self.uids} state {self.state} {self.netns} '
                f'{" ".join(self.argv)[:100]!r}')


def process_table():
    table = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                table[int(entry)] = Proc(int(entry))
            except (OSError, AttributeError, IndexError, ValueError):
                pass  # gone meanwhile
    return table


def ancestors(table, pid):
    chain, seen = [], set()
    while pid in table and pid not in seen and table[pid].ppid > 1:
        seen.add(pid)
        pid = table[pid].ppid
        chain.append(pid)
    return chain


class HostState:
    """The host's network namespaces and run/relay processes, with what tells this test's apart from those of
    other suites or benchmarks going on at the same time on this machine: a process is another's when it descends
    from a process (other than this test's own ancestors) that was there before the test started. What is left of
    this test is new, and either still below its `difysandbox serve` or orphaned (up to PID 1)."""

    def __init__(self, listen):
        self.listen = listen  # serve's argv, kept by its workers and their relays
        self.table = process_table()
        self.namespaces = {p.netns for p in self.table.values() if p.netns}
        self.sandbox = {p.key for p in self.table.values() if self.sandbox_process(p)}

    def sandbox_process(self, p):
        return p.run or p.relay or self.listen in p.argv

    def new_of_ours(self, baseline, own):
        """Sandbox processes not in baseline, not another's; and the new namespaces they, or no one else's, hold."""
        older = {p.pid for p in baseline.table.values()} - own - {1}
        def another(p):
            return any(a in older and baseline.table[a].key == self.table[a].key
                       for a in ancestors(self.table, p.pid) if a in self.table)
        procs = [p for p in self.table.values() if p.key not in baseline.sandbox and self.sandbox_process(p)
                 and not another(p) and not (p.relay and self.listen not in p.argv)]
        holders = {}
        for p in self.table.values():
            if p.netns and p.netns not in baseline.namespaces:
                holders.setdefault(p.netns, []).append(p)
        namespaces = {ns: ps for ns, ps in holders.items() if not all(another(p) for p in ps)}
        return procs, namespaces, holders


def settled_fds(pid, quiet=0.3, timeout=15):
    """The worker's open fds ({fd: target, numbers masked}) once they and its children have not changed for `quiet`
    seconds: after an answer, the worker cleans up the run and prepares the next one (a few milliseconds)."""
    def state():
        fds = {}
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                fds[int(fd)] = re.sub(r'\d+', 'N', os.readlink(f'/proc/{pid}/fd/{fd}'))
            except OSError:
                pass
        kids = sorted(p.key for p in process_table().values() if p.ppid == pid)
        return fds, kids
    last, since, deadline = state(), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() - since < quiet:
        assert time.monotonic() < deadline, f'worker {pid} did not settle within {timeout} s'
        time.sleep(0.02)
        now = state()
        if now != last:
            last, since = now, time.monotonic()
    return last[0]


def descendants(table, pid):
    return [p for p in table.values() if pid in ancestors(table, p.pid)]


# Prepared runs of the runner's warm pool with the default configuration (pool_size.python3 + .nodejs).
POOL_MAX = 3


def the_worker(server, timeout=10):
    """The one worker of serve (the one connection's), once workers of earlier connections are gone."""
    deadline = time.monotonic() + timeout
    while len(workers := server.workers()) != 1:
        assert time.monotonic() < deadline, f'serve has workers {workers}, not one'
        time.sleep(0.02)
    return workers[0]


def test_no_namespace_or_relay_leak_after_1000_runs():
    own = {os.getpid(), *ancestors(process_table(), os.getpid())}  # serve is a child: this test's, not another's
    server = Server()
    listen = f'127.0.0.1:{server.port}'
    baseline = HostState(listen)
    try:
        server.start()
        fds_at, started = {}, time.monotonic()
        with requests.Session() as session:
            for i in range(1, LEAK_RUNS + 1):
                r = server.run('print(1)', session=session, enable_network=True)
                assert r.status_code == 200, (i, r.status_code, r.text)
                body = r.json()
                assert body['code'] == 0 and body['data']['stdout'] == '1\n' and body['data']['error'] == '', (i, body)
                if i in (10, LEAK_RUNS):
                    worker = the_worker(server)
                    fds_at[i] = (worker, settled_fds(worker))
            elapsed = time.monotonic() - started
            print(f'\n{LEAK_RUNS} runs with network on one connection in {elapsed:.1f} s '
                  f'({1000 * elapsed / LEAK_RUNS:.1f} ms each, fd checks included)')

            # One connection, one worker, all the way through; its fds did not grow.
            records = [rec for rec in server.wait_records(LEAK_RUNS) if rec.get('ROUTE') == '/v1/sandbox/run']
            assert len(records) == LEAK_RUNS, f'{len(records)} run records'
            assert len({rec['PEER'] for rec in records}) == 1, {rec['PEER'] for rec in records}
            (worker, fds10), (w1000, fds1000) = fds_at[10], fds_at[LEAK_RUNS]
            assert worker == w1000, f'the worker changed: {worker} after request 10, {w1000} after {LEAK_RUNS}'
            if len(fds1000) != len(fds10):
                fds1000 = settled_fds(worker, quiet=1.0)  # a slow moment is not a leak: what stays is
            gained = sorted(set(fds1000.items()) - set(fds10.items()))
            lost = sorted(set(fds10.items()) - set(fds1000.items()))
            assert len(fds1000) == len(fds10), \
                (f'worker {worker} has {len(fds10)} open fds after request 10 and {len(fds1000)} after request '
                 f'{LEAK_RUNS}: gained {gained}, lost {lost}')

            # While the connection is open: below the worker nothing (it holds no sandbox), below the
            # runner at most its warm pool's prepared runs and their relays, and nothing elsewhere.
            during = HostState(listen)
            runner = server.runner()
            assert not [p for p in descendants(during.table, worker)], \
                f'the worker {worker} has processes of its own: {descendants(during.table, worker)}'
            below = descendants(during.table, runner)
            relays, runs = [p for p in below if p.relay], [p for p in below if p.run]
            assert len(relays) <= POOL_MAX and len(runs) <= POOL_MAX, \
                f'below the runner {runner} after request {LEAK_RUNS}: relays {relays}, runs {runs}'
            below_ns = {p.netns for p in below if p.netns} - {during.table[runner].netns}
            assert len(below_ns) <= POOL_MAX, f'the processes below the runner hold network namespaces {below_ns}'
            procs, namespaces, _ = during.new_of_ours(baseline, own)
            outside = [p for p in procs if p.pid not in (server.proc.pid, worker, runner) and p not in below]
            assert not outside, f'processes of runs or relays outside the runner while it serves: {outside}'
            assert set(namespaces) <= below_ns, \
                f'network namespaces held outside the runner: {set(namespaces) - below_ns}: {namespaces}'
            # urllib3 2 (Debian 13) leaves the connection of the last response open when the session
            # closes, until that response is gone: drop it, so that the client really closes.
            r = None
        gc.collect()

        # The connection is closed: its worker goes; what stays is the runner and its pool.
        deadline = time.monotonic() + 10
        while True:
            table = HostState(listen)
            procs, namespaces, _ = table.new_of_ours(baseline, own)
            pool = descendants(table.table, runner)
            pool_ns = {p.netns for p in pool if p.netns}
            procs = [p for p in procs if p.pid not in (server.proc.pid, runner) and p not in pool]
            namespaces = [ns for ns in namespaces if ns not in pool_ns]
            if not procs and not namespaces or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert not procs and not namespaces, \
            f'left 10 s after the connection closed, serve still up: {procs}; network namespaces {namespaces}'
        rc = server.stop()
        assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM:\n{server.log_text()[-3000:]}'
    finally:
        if server.proc:
            server.stop()
        server.cleanup()

    # serve is gone too: back to the baseline (what other suites do meanwhile on this machine aside).
    after = HostState(listen)
    procs, namespaces, holders = after.new_of_ours(baseline, own)
    others = {ns: ps for ns, ps in holders.items() if ns not in namespaces}
    print(f'network namespaces on the host: {len(baseline.namespaces)} before, {len(after.namespaces)} after '
          f'({len(others)} new ones held by other process trees); run/relay processes on the host: '
          f'{len(baseline.sandbox)} before, {len(after.sandbox)} after')
    assert not procs, f'processes of runs, relays or serve left after serve stopped: {procs}'
    assert not namespaces, f'network namespaces left after serve stopped, with their holders: {namespaces}'


# --------------------------------------------------------------------- each run's TCP hash table (issue 25)

CHILD_EHASH = '/proc/sys/net/ipv4/tcp_child_ehash_entries'
RUN_TCP_HASH_ENTRIES = 2048  # src/sandbox/netns-template.h, NETNS_TCP_HASH_ENTRIES


def netns_value(pid, path):
    """path under /proc/sys/net as the network namespace of pid sees it (the opener's namespace counts)."""
    out = subprocess.run(['nsenter', f'--net=/proc/{pid}/ns/net', 'cat', path], capture_output=True, text=True,
                         timeout=10, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not os.path.exists(CHILD_EHASH), reason='the kernel has no per-namespace TCP hash tables (6.1+)')
def test_a_runs_network_namespace_has_a_tcp_hash_table_of_its_own():
    """Tearing down a namespace that shares the host's TCP hash table walks all of it (262144 buckets on a
    small host) for TIME_WAIT sockets: 0.19 ms of every run. The runner makes the runs' namespaces from a
    template with tcp_child_ehash_entries set, without touching the host's value; each run still has a
    namespace of its own, and no process is ever in the template."""
    host_child, host_table = open(CHILD_EHASH).read(), open('/proc/sys/net/ipv4/tcp_ehash_entries').read()
    server = Server()
    try:
        server.start()
        answer = {}
        running = threading.Thread(target=lambda: answer.update(
            r=server.run('import time\ntime.sleep(4)\nprint(1)', enable_network=True)))
        running.start()
        runner, deadline = server.runner(), time.monotonic() + 20
        while True:  # the run sleeps; the pool's prepared runs wait beside it
            table = process_table()
            below = [p for p in descendants(table, runner) if p.netns and p.state != 'Z']
            runs = [p for p in below if p.run]
            if len(runs) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(runs) >= 2, f'the run and a prepared one were not both seen below the runner: {below}'
        for p in below:
            if p.run:
                assert netns_value(p.pid, '/proc/sys/net/ipv4/tcp_ehash_entries') == RUN_TCP_HASH_ENTRIES, p
            else:  # the relays: in the host's namespace, as the runner
                assert p.netns == table[runner].netns, f'{p} is in a network namespace not its run\'s'
        assert len({p.netns for p in runs}) == len(runs), f'runs share a network namespace: {runs}'
        running.join(timeout=60)
        r = answer['r']
        assert r.status_code == 200 and r.json()['data']['stdout'] == '1\n', r.text
    finally:
        if server.proc:
            server.stop()
        server.cleanup()
    assert open(CHILD_EHASH).read() == host_child, 'the host\'s tcp_child_ehash_entries changed'
    assert open('/proc/sys/net/ipv4/tcp_ehash_entries').read() == host_table
