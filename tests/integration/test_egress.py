"""Network egress of runs with network (src/sandbox/egress.c, difysandbox.conf(5) "NETWORK EGRESS").

"The internet" is a network namespace of this test's own, dsbt-inet-<random>, joined to the host by a veth
pair: 198.51.100.1/24 on the host's side, 198.51.100.2/24 inside, where an HTTP server (8080) and an HTTPS
server (8443, self-signed) count the requests they get. 198.51.100.0/24 is TEST-NET-2, which the relay does
not deny. Runs reach it only through the relay; everything the policy refuses must get a 403 with its reason,
be reported, and never be connected to: listeners of the test on the host's loopback and on the host's own
198.51.100.1 count the connections they get, which must stay zero.

Needs root (namespaces, veth), `ip`, `openssl`, and the real `difysandbox run --network` (see conftest).
Every namespace and link made here is removed by the fixture's finalizer, even when a test fails.
"""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from conftest import CANARY_NAME, CANARY_VALUE, command, parse_output

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


def run_network(code, language='python3', env=None, timeout=120):
    proc = subprocess.run(command(language, ('--network', '--timeout', RUN_TIMEOUT)), input=code.encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env(env), timeout=timeout)
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


# --------------------------------------------------------------------------------------------- Node.js

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


def test_relay_lives_as_long_as_the_run(internet):
    before = set(relay_processes())
    proc = subprocess.Popen(command('python3', ('--network', '--timeout', RUN_TIMEOUT)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env())
    proc.stdin.write(b'import time\ntime.sleep(3)\nprint("done")\n')
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
    proc.stdin.write(b'import time\ntime.sleep(20)\n')
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
