"""The HTTP API of DESIGN §1 through a real `difysandbox serve` on loopback: exact envelopes, statuses and
messages; Dify's client flow for Python, JavaScript and Jinja2 templates; keep-alive; hostile clients
(bad bodies, huge bodies, header floods, slow and vanishing clients), after each of which /health must
still answer. Runs as root (the sandbox needs it).
"""

import collections
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests
import urllib3.connection

from serve_helpers import (API_KEY, HEADERS, CodeExecutionError, dify_execute_code,
                           dify_execute_workflow_code_template, raw_request, require_config, server,
                           start_server, worker_binary)

assert server  # a fixture, used by name

JSON_TYPE = 'application/json'
CODE_MAX = 16 << 20  # default code_max
BODY_MAX = CODE_MAX + 64 * 1024


def envelope(r):
    assert r.headers.get('Content-Type', '').startswith(JSON_TYPE), r.headers
    return r.json()


def assert_error(r, status, code, message):
    assert r.status_code == status, (r.status_code, r.text)
    body = envelope(r)
    assert body == {'code': code, 'message': message, 'data': None}, body
    assert list(body) == ['code', 'message', 'data']


# ---------------------------------------------------------------------------------------- routes

def test_health(server):
    r = requests.get(server.url + '/health')
    assert r.status_code == 200
    assert r.content == b'"ok"'
    assert r.headers['Content-Type'].startswith(JSON_TYPE)


def test_run_python_exact_bytes(server):
    r = server.run('print(1 + 1)')
    assert r.status_code == 200
    assert r.headers['Content-Type'].startswith(JSON_TYPE)
    assert r.content == (b'{"code":0,"message":"success",'
                         b'"data":{"stdout":"2\\n","stderr":"","error":"","exit_code":0}}')


def test_run_nodejs(server):
    r = server.run('console.log("a/b", 6 * 7)', language='nodejs')
    assert envelope(r) == {'code': 0, 'message': 'success',
                           'data': {'stdout': 'a/b 42\n', 'stderr': '', 'error': '', 'exit_code': 0}}
    assert b'a/b' in r.content  # slashes are not escaped


def test_stderr_alone_is_no_error(server):
    data = envelope(server.run('import sys\nsys.stderr.write("careful\\n")'))['data']
    assert data == {'stdout': '', 'stderr': 'careful\n', 'error': '', 'exit_code': 0}


def test_failed_run_error_text(server):
    data = envelope(server.run('import sys\nprint("out")\nsys.stderr.write("boom\\n")\nsys.exit(3)'))['data']
    assert data == {'stdout': 'out\n', 'stderr': 'boom\n', 'error': 'process exited with code 3\nboom\n',
                    'exit_code': 3}


def test_timeout_error_text(server):
    body = envelope(server.run('while True:\n    pass'))
    assert body['code'] == 0
    assert body['data']['exit_code'] == 137
    assert body['data']['error'] == 'process exited with code 137\nerror: timeout\n'


def test_seccomp_kill_error_text(server):
    # a never-allow call (ptrace) kills; the line after upstream's names it
    data = envelope(server.run('import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)'))['data']
    assert data['exit_code'] == 159
    assert data['error'].startswith('process exited with code 159\nerror: operation not permitted\n'
                                    'error: system call ptrace is never allowed in this sandbox')


def test_fork_fails_at_the_users_line(server):
    data = envelope(server.run('import os\nos.fork()'))['data']
    assert data['exit_code'] == 1
    assert data['error'].startswith('process exited with code 1\nTraceback')
    assert data['error'].endswith('PermissionError: [Errno 1] Operation not permitted\n')


def test_output_that_is_not_utf8_becomes_replacement_characters(server):
    r = server.run('import sys\nsys.stdout.buffer.write(b"\\xff\\xfeok\\n")')
    r.content.decode('utf-8')  # the whole answer is UTF-8
    assert envelope(r)['data']['stdout'] == '\ufffd\ufffdok\n'


def test_unicode_round_trip(server):
    data = envelope(server.run('print("héllo, 世界 🚀")'))['data']
    assert data['stdout'] == 'héllo, 世界 🚀\n'


@pytest.mark.parametrize('method,path,headers', [
    ('POST', '/v1/sandbox/run', {}),
    ('POST', '/v1/sandbox/run', {'X-Api-Key': 'wrong'}),
    ('POST', '/v1/sandbox/run', {'X-Api-Key': API_KEY + 'x'}),
    ('GET', '/v1/sandbox/dependencies?language=python3', {}),
    ('POST', '/v1/sandbox/dependencies/update', {'X-Api-Key': ''}),
    ('GET', '/v1/sandbox/dependencies/refresh', {'X-Api-Key': 'dify'}),
])
def test_bad_key_is_401_with_empty_body(server, method, path, headers):
    r = requests.request(method, server.url + path, headers=headers,
                         json={'language': 'python3', 'code': 'print(1)'} if method == 'POST' else None)
    assert r.status_code == 401
    assert r.content == b''


def test_refused_requests_are_recorded_with_their_code(server):
    """Issue 14: a 401 has no envelope, and its record said CODE=0, as a success's would. Its code is
    -401 (and a 404's -404), so that CODE= finds every refused request."""
    first = len(server.records())
    assert requests.post(server.url + '/v1/sandbox/run', headers={'X-Api-Key': 'wrong'},
                         json={'language': 'python3', 'code': 'print(1)'}).status_code == 401
    assert requests.get(server.url + '/nowhere').status_code == 404
    # Other records (a /health probe) may land in between: wait for these two by their status.
    deadline = time.monotonic() + 10
    while True:
        records = server.records()[first:]
        by_status = {r['STATUS']: r for r in records if r.get('STATUS') in ('401', '404')}
        if len(by_status) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert set(by_status) == {'401', '404'}, records
    assert by_status['401']['CODE'] == '-401', records
    assert by_status['404']['CODE'] == '-404', records


@pytest.mark.parametrize('method,path', [
    ('GET', '/'),
    ('GET', '/v1/sandbox'),
    ('GET', '/v1/sandbox/run'),        # known route, wrong method: gin answers 404 too
    ('POST', '/health'),
    ('PUT', '/v1/sandbox/run'),
    ('GET', '/health/'),
    ('GET', '/v1/sandbox/dependencies/update'),
    ('POST', '/v1/sandbox/dependencies/refresh'),
])
def test_unknown_route_is_404(server, method, path):
    r = requests.request(method, server.url + path, headers=HEADERS)
    assert r.status_code == 404
    assert r.content == b'404 page not found'


def test_unsupported_language(server):
    assert_error(server.run('print(1)', language='ruby'), 400, -400, 'unsupported language')
    assert_error(server.run('print(1)', language='Python3'), 400, -400, 'unsupported language')
    # issue 12: a NUL inside the JSON string ended the name, and this ran as python3
    assert_error(server.run('print(1)', language='python3\u0000x'), 400, -400, 'unsupported language')


def test_preload_ignored_without_enable_preload(server):
    # Default config: enable_preload is false, so the preload never runs and its name is undefined.
    data = envelope(server.run('print(PRELOADED)', preload='PRELOADED = 1'))['data']
    assert data['exit_code'] == 1
    assert "NameError: name 'PRELOADED' is not defined" in data['stderr']


def test_enable_network_false_and_true(server):
    # enable_network is on by default: both are runs.
    for network in (False, True):
        assert envelope(server.run('print("n")', enable_network=network))['data']['stdout'] == 'n\n'


def test_code_longer_than_code_max(server):
    code = '#' * (CODE_MAX + 1)
    assert_error(server.run(code), 400, -400, f'code is longer than code_max ({CODE_MAX} bytes)')
    assert server.healthy()


# -------------------------------------------------------------------------------- dependencies

def test_dependencies_list(server):
    r = requests.get(server.url + '/v1/sandbox/dependencies', params={'language': 'python3'}, headers=HEADERS)
    body = envelope(r)
    assert r.status_code == 200 and body['code'] == 0 and body['message'] == 'success', body
    deps = body['data']['dependencies']
    assert isinstance(deps, list)
    for d in deps:
        assert set(d) == {'name', 'version'} and all(isinstance(v, str) and v for v in d.values()), d
    # pip's names and versions (requests 2.28.1), never Debian's (python3-requests 2.28.1+dfsg-1).
    if os.path.exists('/var/lib/difysandbox/python3/current'):
        names = {d['name'].lower() for d in deps}
        assert {'requests', 'jinja2'} <= names, deps
        # A Debian revision (-1) or epoch (1:) marks dpkg's version; "+dfsg" alone does not: Debian 13's
        # pandas says 2.2.3+dfsg of itself in its metadata, and that is what pip and a run see.
        assert not any(d['name'].startswith('python3-') or re.search(r'-\d+$|^\d+:', d['version'])
                       for d in deps), deps


def test_dependencies_nodejs_has_no_packages(server):
    r = requests.get(server.url + '/v1/sandbox/dependencies?language=nodejs', headers=HEADERS)
    assert envelope(r) == {'code': 0, 'message': 'success', 'data': {'dependencies': []}}


def test_dependencies_language_checked(server):
    assert_error(requests.get(server.url + '/v1/sandbox/dependencies', headers=HEADERS), 400, -400,
                 'language is required')
    r = requests.get(server.url + '/v1/sandbox/dependencies?language=perl', headers=HEADERS)
    assert_error(r, 400, -400, 'unsupported language')


@pytest.mark.parametrize('method,path', [('POST', '/v1/sandbox/dependencies/update'),
                                         ('GET', '/v1/sandbox/dependencies/refresh')])
def test_dependencies_rebuild_needs_the_manager(server, method, path):
    """The rebuild routes go through difysandbox-manager (tests/system drives them with one). Without it
    (no system bus here) they answer -500 naming the manager, and runs keep working."""
    link = '/var/lib/difysandbox/python3/current'
    before = os.path.realpath(link)
    r = requests.request(method, server.url + path, headers=HEADERS, timeout=60)
    body = envelope(r)
    assert r.status_code == 200 and body['code'] == -500, body
    assert 'difysandbox manager' in body['message'], body
    assert os.path.realpath(link) == before
    assert envelope(server.run('import jinja2; print("ok")'))['data']['stdout'] == 'ok\n'


def test_dependencies_rebuild_unsupported_language(server):
    assert_error(requests.post(server.url + '/v1/sandbox/dependencies/update?language=cobol', headers=HEADERS),
                 400, -400, 'unsupported language')


# ------------------------------------------------------------------------------- Dify's client

def test_dify_python3_template(server):
    code = ('def main(arg1: str, arg2: int) -> dict:\n'
            '    return {"result": arg1 * arg2, "n": arg2, "nested": {"list": [1, 2.5, None, True]}}\n')
    out = dify_execute_workflow_code_template(server.url, 'python3', code, {'arg1': 'ab', 'arg2': 3})
    assert out == {'result': 'ababab', 'n': 3, 'nested': {'list': [1, 2.5, None, True]}}


def test_dify_python3_unicode_inputs(server):
    code = 'def main(text: str) -> dict:\n    return {"upper": text.upper(), "len": len(text)}\n'
    out = dify_execute_workflow_code_template(server.url, 'python3', code, {'text': 'grüße 世界'})
    assert out == {'upper': 'GRÜSSE 世界', 'len': 8}


def test_dify_javascript_template(server):
    code = ('function main({arg1, arg2}) {\n'
            '    return {result: arg1 + arg2, items: [arg1, arg2].map(s => s.length)}\n'
            '}\n')
    out = dify_execute_workflow_code_template(server.url, 'javascript', code, {'arg1': 'foo', 'arg2': 'bár'})
    assert out == {'result': 'foobár', 'items': [3, 3]}


def test_dify_jinja2_template(server):
    template = 'Hello {{ name }}! {% for i in items %}[{{ i }}]{% endfor %}'
    out = dify_execute_workflow_code_template(server.url, 'jinja2', template, {'name': 'Dify', 'items': [1, 2]})
    assert out == {'result': 'Hello Dify! [1][2]'}


def test_dify_error_reaches_the_user(server):
    code = 'def main() -> dict:\n    raise ValueError("bad input")\n'
    with pytest.raises(CodeExecutionError) as e:
        dify_execute_workflow_code_template(server.url, 'python3', code, {})
    assert str(e.value).startswith('process exited with code 1\n')
    assert 'ValueError: bad input' in str(e.value)


def test_dify_sees_a_bad_language_as_http_error(server):
    with pytest.raises(CodeExecutionError) as e:
        dify_execute_code(server.url, 'ruby', '', 'puts 1')
    assert 'got status code 400' in str(e.value)


# ---------------------------------------------------------------------------------- keep-alive

def test_keep_alive_one_connection_for_ten_requests(server, monkeypatch):
    connects = []
    original = urllib3.connection.HTTPConnection.connect

    def counting_connect(self):
        connects.append(self)
        return original(self)

    monkeypatch.setattr(urllib3.connection.HTTPConnection, 'connect', counting_connect)
    first = len(server.records())
    with requests.Session() as s:
        for i in range(10):
            lang, code = ('python3', f'print({i})') if i % 2 else ('nodejs', f'console.log({i})')
            r = server.run(code, language=lang, session=s)
            assert envelope(r)['data']['stdout'] == f'{i}\n'
    assert len(connects) == 1
    # A record of an earlier test may still land after `first` was read: pick ours by connection.
    records = server.wait_records(first + 10)[first:]
    peer, count = collections.Counter(rec['PEER'] for rec in records).most_common(1)[0]
    mine = [rec for rec in records if rec['PEER'] == peer]
    assert count == 10, records
    assert [int(rec['REQUEST']) for rec in mine] == list(range(1, 11)), mine


def test_keep_alive_survives_errors(server):
    """An error answer with the body read keeps the connection (Dify's pool reuses it)."""
    with requests.Session() as s:
        for body in (b'{', b'{"language":"ruby","code":"x"}', b'[]'):
            r = s.post(server.url + '/v1/sandbox/run', data=body, headers=HEADERS)
            assert r.status_code == 400 and r.headers.get('Connection') != 'close'
        assert envelope(server.run('print(5)', session=s))['data']['stdout'] == '5\n'


# ------------------------------------------------------------------------------ bad input battery

BAD_BODIES = [
    (b'', 'request body is not valid JSON: unexpected end of data'),
    (b'{', 'request body is not valid JSON: unexpected end of data'),
    (b'{"language": "python3", "code": "print(1)"', 'request body is not valid JSON: unexpected end of data'),
    (b'not json', 'request body is not valid JSON: unexpected character'),
    (b"{'language': 'python3', 'code': 'print(1)'}", 'request body is not valid JSON: unexpected character'),
    (b'{"language": "python3", "code": "print(1)"} trailing',
     'request body is not valid JSON: unexpected character'),
    (b'{"language": "python3", "code": "print(1)",}', 'request body is not valid JSON: unexpected character'),
    (b'[' * 100 + b']' * 100, 'request body is not valid JSON: nested too deeply'),
    (b'[]', 'request body must be a JSON object'),
    (b'"python3"', 'request body must be a JSON object'),
    (b'42', 'request body must be a JSON object'),
    (b'null', 'request body must be a JSON object'),
    (b'{"language": "python3", "code": "print(\xff)"}', 'request body is not valid UTF-8'),
    (b'{"language": "python3", "code": "\xc0\xaf"}', 'request body is not valid UTF-8'),
    (b'{"code": "print(1)"}', 'language is required'),
    (b'{"language": "", "code": "print(1)"}', 'language is required'),
    (b'{"language": null, "code": "print(1)"}', 'language is required'),
    (b'{"language": 3, "code": "print(1)"}', 'language must be a string'),
    (b'{"language": ["python3"], "code": "print(1)"}', 'language must be a string'),
    (b'{"language": "python3"}', 'code is required'),
    (b'{"language": "python3", "code": ""}', 'code is required'),
    (b'{"language": "python3", "code": 1}', 'code must be a string'),
    (b'{"language": "python3", "code": {"a": 1}}', 'code must be a string'),
    (b'{"language": "python3", "code": "print(1)", "preload": 7}', 'preload must be a string'),
    (b'{"language": "python3", "code": "print(1)", "enable_network": "true"}',
     'enable_network must be a boolean'),
    (b'{"language": "python3", "code": "print(1)", "enable_network": 1}', 'enable_network must be a boolean'),
]


@pytest.mark.parametrize('body,message', BAD_BODIES, ids=[repr(b[:30]) for b, _ in BAD_BODIES])
def test_bad_body(server, body, message):
    r = requests.post(server.url + '/v1/sandbox/run', data=body,
                      headers={**HEADERS, 'Content-Type': 'application/json'})
    assert_error(r, 400, -400, message)
    assert server.healthy()


def test_unknown_fields_and_nulls_are_ignored(server):
    body = {'language': 'python3', 'code': 'print(7)', 'preload': None, 'enable_network': None, 'extra': [1]}
    r = requests.post(server.url + '/v1/sandbox/run', json=body, headers=HEADERS)
    assert envelope(r)['data']['stdout'] == '7\n'


def test_huge_body_is_413(server):
    r = requests.post(server.url + '/v1/sandbox/run', data=b'x' * (BODY_MAX + 1), headers=HEADERS)
    assert_error(r, 413, -400, 'request body too large')
    assert server.healthy()


def test_huge_chunked_body_is_413(server):
    def chunks():
        for _ in range(BODY_MAX // 65536 + 2):
            yield b'x' * 65536

    r = requests.post(server.url + '/v1/sandbox/run', data=chunks(), headers=HEADERS)
    assert_error(r, 413, -400, 'request body too large')
    assert server.healthy()


def test_body_at_the_cap_is_read(server):
    code = 'print("fits")' + ' ' * (CODE_MAX - 200)
    r = server.run(code)
    assert envelope(r)['data']['stdout'] == 'fits\n'


def raw_envelope(reply):
    """The JSON envelope of a raw reply (issue 12: not libmicrohttpd's HTML)."""
    assert re.search(rb'(?im)^content-type: application/json', reply.head), reply
    return json.loads(reply.body)


def test_header_flood(server):
    flood = b''.join(b'X-Flood-%d: %s\r\n' % (i, b'a' * 1000) for i in range(200))
    reply = raw_request(server.port, b'GET /health HTTP/1.1\r\nHost: x\r\n' + flood + b'\r\n')
    assert reply.status == 431, reply
    assert raw_envelope(reply) == {'code': -400, 'message': 'request headers too large', 'data': None}
    assert server.healthy()


def test_long_url(server):
    reply = raw_request(server.port, b'GET /' + b'a' * 100000 + b' HTTP/1.1\r\nHost: x\r\n\r\n')
    assert reply.status in (414, 431) or (reply.status == 0 and reply.closed), reply
    reply = raw_request(server.port, b'GET /' + b'a' * 10000 + b' HTTP/1.1\r\nHost: x\r\n\r\n')
    assert reply.status == 414, reply
    assert raw_envelope(reply) == {'code': -400, 'message': 'request URL too long', 'data': None}
    assert server.healthy()


RUN_HEAD = b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode() + b'\r\n'
RUN_BODY = b'{"language": "python3", "code": "print(1)"}'


@pytest.mark.parametrize('framing', [
    b'Content-Length: %d\r\nContent-Length: 10\r\n' % len(RUN_BODY),
    b'Content-Length: %d\r\ncontent-length: %d\r\n' % (len(RUN_BODY), len(RUN_BODY)),
    b'Content-Length: %d\r\nTransfer-Encoding: chunked\r\n' % len(RUN_BODY),
], ids=['two-lengths', 'same-length-twice', 'length-and-chunked'])
def test_ambiguous_body_length_refused(server, framing):
    """Issue 12: a request with two Content-Length headers was run. Which one counts is how requests are
    smuggled past a proxy in front: it is refused, and nothing runs."""
    first = len(server.records())
    reply = raw_request(server.port, RUN_HEAD + framing + b'\r\n' + RUN_BODY)
    assert reply.status == 400, reply
    message = raw_envelope(reply)['message']
    assert message in ('more than one Content-Length header', 'both Content-Length and Transfer-Encoding')
    assert not any(r.get('DIFYSANDBOX_RUN_ID') for r in server.wait_records(first + 1)[first:])
    assert server.healthy()


def libmicrohttpd_major():
    """The major version of this host's libmicrohttpd, as the library says (0.9.75 on Debian 12, 1.0.1 on 13)."""
    import ctypes
    lib = ctypes.CDLL('libmicrohttpd.so.12')
    lib.MHD_get_version.restype = ctypes.c_char_p
    return int(lib.MHD_get_version().decode().split('.')[0])


def test_junk_after_a_request_gets_400_at_once(server):
    """Issue 12: bytes after a valid request on the same connection hung until the 30 s idle timeout.
    They are a request line in the making, which has 2 s: then 400 in Dify's envelope, and the end."""
    for junk in (b'garbage', b'\x00\x01junk'):
        with socket.create_connection(('127.0.0.1', server.port), timeout=20) as s:
            start = time.monotonic()
            s.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n' + junk)
            data = b''
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            elapsed = time.monotonic() - start
        assert data.startswith(b'HTTP/1.1 200 OK'), data
        second = data[data.index(b'"ok"') + 4:]
        assert elapsed < 10, f'answered after {elapsed:.1f} s: the idle timeout, not the line deadline'
        if junk.startswith(b'\x00') and second == b'' and libmicrohttpd_major() >= 1:
            # libmicrohttpd 1.0 (Debian 13) closes, by itself and at once, a connection whose request line
            # holds control bytes: the end came without a hang, with nothing for the worker to answer.
            continue
        assert second.startswith(b'HTTP/1.1 400 '), data
        assert b'"request line not received in time"' in second, data
    assert server.healthy()


def test_partial_request_line_is_dropped_within_seconds(server):
    """A connection must deliver its request line within about 2 s (issue 12: floods of partial lines
    held every worker)."""
    for data in (b'', b'GET /hea'):
        with socket.create_connection(('127.0.0.1', server.port), timeout=30) as s:
            start = time.monotonic()
            s.sendall(data)
            reply = b''
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
            elapsed = time.monotonic() - start
        assert elapsed < 10, f'closed after {elapsed:.1f} s'
        if data:
            assert reply.startswith(b'HTTP/1.1 400 ') and b'"code":-400' in reply, reply
        else:
            assert reply == b'', reply
    assert server.healthy()


def test_garbage_request_line(server):
    reply = raw_request(server.port, b'\x00\x01\x02 garbage\r\n\r\n')
    assert reply.status in (0, 400), reply
    assert server.healthy()


def test_slowloris_is_disconnected(server):
    """The request line at once, then one byte per second: the request is not complete within 10 s, so
    the connection is dropped. (A request line itself has 2 s: test_partial_request_line_...)"""
    request = (b'Host: x\r\nX-Api-Key: ' + API_KEY.encode()
               + b'\r\nContent-Length: 200\r\n\r\n' + b' ' * 200)
    start = time.monotonic()
    closed = None
    with socket.create_connection(('127.0.0.1', server.port)) as s:
        s.settimeout(1)
        s.send(b'POST /v1/sandbox/run HTTP/1.1\r\n')
        for byte in request:
            try:
                s.send(bytes([byte]))
                data = s.recv(100)
                if data == b'':
                    closed = time.monotonic() - start
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = time.monotonic() - start
                break
            if time.monotonic() - start > 30:
                break
    assert closed is not None, 'a client sending one byte per second was never disconnected'
    assert 9 <= closed <= 14, f'disconnected after {closed:.1f} s, expected about 10 s'
    assert server.healthy()


def test_silent_client_is_disconnected(server):
    """A connection that never sends a byte is closed once its request line is late (2 s); a keep-alive
    connection after the 30 s idle timeout, which a request without a valid key does not reset (issue 24):
    so one whose only request carried no key, 30 s after its start."""
    start = time.monotonic()
    with socket.create_connection(('127.0.0.1', server.port)) as s:
        s.settimeout(60)
        assert s.recv(1) == b''
    assert time.monotonic() - start <= 10
    for request, low, high in ((b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', 26, 40),
                               (b'GET /v1/sandbox/dependencies?language=python3 HTTP/1.1\r\nHost: x\r\n'
                                b'X-Api-Key: ' + API_KEY.encode() + b'\r\n\r\n', 28, 40)):
        with socket.create_connection(('127.0.0.1', server.port)) as s:
            s.settimeout(60)
            s.sendall(request)
            data = b''
            while b'}' not in data and b'"ok"' not in data:
                data += s.recv(65536)
            start = time.monotonic()
            assert s.recv(1) == b''
        assert low <= time.monotonic() - start <= high, request
    assert server.healthy()


def test_client_closes_mid_body(server):
    first = len(server.records())
    with socket.create_connection(('127.0.0.1', server.port)) as s:
        s.sendall(b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode()
                  + b'\r\nContent-Length: 1000\r\n\r\n{"language": "pyth')
    # Other records (a /health probe of an earlier test) may land in between: find the POST's.
    deadline = time.monotonic() + 10
    while True:
        posts = [r for r in server.records()[first:] if r.get('METHOD') == 'POST']
        if posts or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert posts, server.records()[first:]
    assert posts[0]['TERMINATION'] in ('client-abort', 'read-error', 'error'), posts
    assert server.healthy()


def test_client_gone_during_run(server):
    """The answer has nobody to go to: the worker must neither crash the server nor hang."""
    with socket.create_connection(('127.0.0.1', server.port)) as s:
        body = json.dumps({'language': 'python3', 'code': 'import time; time.sleep(1); print(1)'}).encode()
        s.sendall(b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode()
                  + b'\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
    time.sleep(2)
    assert server.healthy()


def test_pipelined_requests(server):
    req = b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as s:
        s.sendall(req * 3)
        data = b''
        while data.count(b'"ok"') < 3:
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    assert data.count(b'HTTP/1.1 200 OK') == 3


def test_expect_100_continue(server):
    body = json.dumps({'language': 'python3', 'code': 'print(3)'}).encode()
    with socket.create_connection(('127.0.0.1', server.port), timeout=30) as s:
        s.sendall(b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode()
                  + b'\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n' % len(body))
        assert s.recv(100).startswith(b'HTTP/1.1 100 Continue')
        s.sendall(body)
        data = b''
        while b'"exit_code"' not in data:
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    assert b'"stdout":"3\\n"' in data


def test_bad_key_with_big_body_is_not_read(server):
    """401 is decided from the headers: a stranger's body is not read (the connection closes after)."""
    reply = raw_request(server.port,
                        b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n')
    assert reply.status == 401 and reply.body == b''


# ------------------------------------------------------------------------- configured servers

@pytest.fixture(scope='module')
def configured():
    """A second server with network off and preload on."""
    s = start_server({'enable_network': False, 'enable_preload': True})
    yield s
    s.stop()
    s.cleanup()


def test_network_disabled(configured):
    require_config(configured, enable_network='no')
    r = configured.run('print(1)', enable_network=True)
    # HTTP 200, as upstream: Dify shows the message of a -400 only from an HTTP 200
    assert_error(r, 200, -400, 'network is disabled, please enable it in the configuration')
    assert envelope(configured.run('print(1)', enable_network=False))['data']['stdout'] == '1\n'


def test_preload_runs_inside_the_sandbox(configured):
    require_config(configured, enable_preload='yes')
    preload = 'import os\nPRELOADED = os.getuid()\n'
    data = envelope(configured.run('print(PRELOADED != 0)', preload=preload))['data']
    assert data['stdout'] == 'True\n', data  # it ran as the run's UID, not as root before the sandbox


def test_dify_jinja2_with_preload(configured):
    require_config(configured, enable_preload='yes', enable_network='no')
    with pytest.raises(CodeExecutionError) as e:  # Dify always asks for network
        dify_execute_workflow_code_template(configured.url, 'jinja2', '{{ a }}', {'a': 1})
    assert 'network is disabled' in str(e.value)


# ------------------------------------------------------------------------------ socket activation

def test_worker_binary_on_fd0(tmp_path):
    """difysandbox-worker serves the connection it gets as fd 0 (StandardInput=socket), then exits; its runs
    go to a difysandbox-runner started the way difysandbox-runner.socket starts it."""
    binary = worker_binary()
    runner_binary = os.path.join(os.path.dirname(binary), 'difysandbox-runner')
    if not os.access(binary, os.X_OK) or not os.access(runner_binary, os.X_OK):
        pytest.skip(f'no difysandbox-worker or difysandbox-runner next to {binary} (set DIFYSANDBOX_WORKER)')
    runner_socket = str(tmp_path / 'runner.sock')
    # No key is in force unless configured (issue 14): the runner, whose configuration the worker gets,
    # is given the tests' key (systemd-socket-activate passes on only what --setenv names).
    runner = subprocess.Popen(['systemd-socket-activate', '--seqpacket', '-l', runner_socket,
                               f'--setenv=API_KEY={API_KEY}', runner_binary],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(runner_socket) and time.monotonic() < deadline:
            time.sleep(0.05)
        with socket.socket() as ls:
            ls.bind(('127.0.0.1', 0))
            ls.listen()
            port = ls.getsockname()[1]
            result = {}

            def serve_one():
                conn, _ = ls.accept()
                with conn:
                    proc = subprocess.Popen([binary, '--runner-socket', runner_socket], stdin=conn, stdout=conn,
                                            stderr=subprocess.PIPE)
                result['stderr'] = proc.communicate(timeout=60)[1]
                result['rc'] = proc.returncode

            t = threading.Thread(target=serve_one)
            t.start()
            with requests.Session() as s:
                assert s.get(f'http://127.0.0.1:{port}/health').content == b'"ok"'
                r = s.post(f'http://127.0.0.1:{port}/v1/sandbox/run', headers=HEADERS,
                           json={'language': 'python3', 'code': 'print("fd0")'})
                assert r.json()['data']['stdout'] == 'fd0\n', r.text
            t.join(timeout=60)
        assert result.get('rc') == 0, result
        assert b'REQUEST=2' in result['stderr'], result  # both requests on the one connection
    finally:
        runner.terminate()
        runner.wait(timeout=30)


def test_worker_without_runner_answers_503(tmp_path):
    """Issue 24: a worker that cannot reach the runner closed the connection without a word. It answers
    the request 503 in Dify's envelope, naming the runner, and closes."""
    binary = worker_binary()
    if not os.access(binary, os.X_OK):
        pytest.skip(f'no difysandbox-worker at {binary} (set DIFYSANDBOX_WORKER)')
    runner_socket = str(tmp_path / 'nobody-listens.sock')
    body = json.dumps({'language': 'python3', 'code': 'print(1)'}).encode()
    for request in (b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n',
                    b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode()
                    + b'\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body) + body):
        client, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with client:
            proc = subprocess.Popen([binary, '--runner-socket', runner_socket], stdin=server_end,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            server_end.close()
            client.settimeout(30)
            client.sendall(request)
            answer = b''
            while chunk := client.recv(65536):
                answer += chunk
            stderr = proc.communicate(timeout=30)[1]
        head, _, payload = answer.partition(b'\r\n\r\n')
        assert head.startswith(b'HTTP/1.1 503'), (answer, stderr)
        assert b'connection: close' in head.lower(), head
        envelope = json.loads(payload)
        assert envelope['code'] == -503 and envelope['data'] is None, envelope
        assert 'difysandbox-runner' in envelope['message'] and runner_socket in envelope['message'], envelope
        assert proc.returncode != 0


def test_keep_alive_workers_die_with_serve():
    """Issue 12: keep-alive workers orphaned by a SIGKILLed `serve` kept serving. They die with it."""
    s = start_server()
    conns = []
    try:
        for _ in range(3):
            c = socket.create_connection(('127.0.0.1', s.port), timeout=10)
            c.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
            data = b''
            while b'"ok"' not in data:
                data += c.recv(65536)
            conns.append(c)
        workers = s.workers()
        assert len(workers) >= 3, workers
        s.proc.kill()
        s.proc.wait()
        deadline = time.monotonic() + 10
        alive = workers
        while alive and time.monotonic() < deadline:
            alive = [p for p in workers if os.path.exists(f'/proc/{p}') and
                     open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z']
            time.sleep(0.1)
        assert not alive, f'workers {alive} outlived serve'
        for c in conns:  # and their connections are closed, not served
            c.settimeout(10)
            try:
                c.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
                assert c.recv(65536) == b''
            except (ConnectionResetError, BrokenPipeError):
                pass
    finally:
        for c in conns:
            c.close()
        s.stop()
        s.cleanup()
