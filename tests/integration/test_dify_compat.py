"""What a Dify user sees where upstream dify-sandbox and difysandbox used to differ (issue 13), through a
real `difysandbox serve` and Dify's own request shapes (serve_helpers copies its python3 and javascript
code templates: base64 inputs, <<RESULT>> markers):

  - a 10 MB input is accepted (code_max 16M by default; it was 1M);
  - a 20 MB body gets the JSON 413 even from a client that writes its whole body before reading,
    never a reset or broken pipe (the lingering close of src/worker/http.c);
  - 60 slow requests with max_requests 50: only the overflow gets 503, at once; the others wait for a
    worker, longer than the old max(2 x worker_timeout, 10 s) bound, and succeed (queue_timeout);
  - the dependency route names requests, httpx and jinja2 as pip does, with the versions a run's own
    importlib.metadata reports.

Runs as root (the sandbox needs it).
"""

import json
import os
import re
import shutil
import socket
import threading
import time

import pytest
import requests

from serve_helpers import (HEADERS, CodeExecutionError, dify_execute_code,
                           dify_execute_workflow_code_template, python3_runner, start_server)

BODY_413 = {'code': -400, 'message': 'request body too large', 'data': None}


@pytest.fixture(scope='module')
def server():
    s = start_server()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def document_text(size):
    """Extracted-document-like text: words, lines and some non-ASCII, size bytes of UTF-8 or a few less."""
    line = 'Paragraph of extracted text with numbers 12345 and accents àéîõü, as PDFs give. \n'
    text = line * (size // len(line.encode()))
    return text


# ------------------------------------------------------------------------------------- payload size

@pytest.mark.parametrize('language', ['python3', 'javascript'])
def test_ten_megabyte_input_is_accepted(server, language):
    text = document_text(10_000_000)
    assert len(text.encode()) > 9_900_000
    if language == 'python3':
        code = 'def main(text: str) -> dict:\n    return {"chars": len(text), "lines": text.count("\\n")}\n'
    else:
        code = 'function main({text}) {\n    return {chars: text.length, lines: text.split("\\n").length - 1}\n}\n'
    result = dify_execute_workflow_code_template(server.url, language, code, {'text': text})
    assert result == {'chars': len(text), 'lines': text.count('\n')}


# ------------------------------------------------------------------------------- refused body, answered

def dify_body(size):
    """The JSON body Dify sends for a python3 code node whose input is size bytes of text."""
    script, preload = python3_runner('def main(text: str) -> dict:\n    return {"n": len(text)}\n',
                                     {'text': document_text(size)})
    return json.dumps({'language': 'python3', 'code': script, 'preload': preload,
                       'enable_network': True}).encode()


def write_all_then_read(port, body, timeout=60):
    """POSTs body the way a blocking client does: the whole request is written before a byte is read.
    Returns (status, parsed JSON body); an error while writing or reading is raised as is."""
    head = (f'POST /v1/sandbox/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Api-Key: {HEADERS["X-Api-Key"]}\r\n'
            f'Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n').encode()
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.sendall(head + body)
        data = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b'\r\n\r\n')
    m = re.match(rb'HTTP/1\.1 (\d{3}) ', head)
    assert m, data[:300]
    length = int(re.search(rb'(?im)^content-length:\s*(\d+)', head).group(1))
    return int(m.group(1)), json.loads(rest[:length])


def test_twenty_megabyte_body_gets_json_413_from_write_all_client(server):
    body = dify_body(15_000_000)
    assert len(body) > 20_000_000
    # Upstream's Dify saw a broken pipe in 3 of 8 tries: every try must get the answer.
    for attempt in range(6):
        try:
            status, answer = write_all_then_read(server.port, body)
        except OSError as e:
            pytest.fail(f'try {attempt + 1}: the client got {e!r} instead of the 413')
        assert (status, answer) == (413, BODY_413), (attempt, status, answer)
    assert server.healthy()


def test_twenty_megabyte_body_through_difys_client(server):
    """Dify's own client (requests) gets the 413 as a status: its message names the status (older Dify
    wraps it in "likely a network issue ( Error: ... got status code 413 ...)"), not a broken pipe."""
    body = dify_body(15_000_000)
    r = requests.post(server.url + '/v1/sandbox/run', data=body, timeout=60,
                      headers={**HEADERS, 'Content-Type': 'application/json'})
    assert (r.status_code, r.json()) == (413, BODY_413)
    with pytest.raises(CodeExecutionError) as e:
        dify_execute_code(server.url, 'python3', '', json.loads(body)['code'])
    assert 'got status code 413' in str(e.value), str(e.value)


# ----------------------------------------------------------------------------------------------- queue

WORKERS = 5
SLEEP = 2.0
CLIENTS = 60
MAX_REQUESTS = 50


@pytest.fixture(scope='module')
def queue_server():
    # Its own admission state and UID range, so that other suites on the host cannot take its slots.
    # worker_timeout stays at its default (5 s): the old bound was max(2 x 5 s, 10 s) = 10 s, and
    # 50 runs of SLEEP s on WORKERS slots take at least 20 s, so the last ones wait longer than that.
    state = f'/run/difysandbox-test-queue-{os.getpid()}'
    config = {'max_workers': WORKERS, 'max_requests': MAX_REQUESTS, 'prewarm': False, 'state_dir': state,
              'uid_min': 31000, 'uid_max': 31099}
    s = start_server(config)
    assert s.effective.get('max_workers') == str(WORKERS), s.effective
    yield s
    s.stop()
    s.cleanup()
    shutil.rmtree(state, ignore_errors=True)


def test_overflow_refused_at_once_the_rest_wait_and_succeed(queue_server):
    assert (MAX_REQUESTS // WORKERS) * SLEEP > 10, 'the queue must outlast the old 10 s bound'
    code = f'import time\n\ndef main(tag: int) -> dict:\n    time.sleep({SLEEP})\n    return {{"tag": tag}}\n'
    results = {}
    barrier = threading.Barrier(CLIENTS)

    def client(i):
        script, preload = python3_runner(code, {'tag': i})
        body = {'language': 'python3', 'code': script, 'preload': preload, 'enable_network': True}
        with requests.Session() as session:
            barrier.wait()
            try:
                r = session.post(queue_server.url + '/v1/sandbox/run', json=body, headers=HEADERS, timeout=120)
                results[i] = (r.status_code, r.json(), time.monotonic())
            except requests.RequestException as e:
                results[i] = (None, repr(e), time.monotonic())

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert len(results) == CLIENTS, f'{CLIENTS - len(results)} clients got no answer'

    refused = {i: r for i, r in results.items() if r[0] == 503}
    done = {i: r for i, r in results.items() if r[0] == 200}
    others = {i: r for i, r in results.items() if i not in refused and i not in done}
    assert not others, others
    for i, (_, answer, _) in refused.items():
        assert answer == {'code': -503, 'message': 'Too many requests', 'data': None}, answer
    for i, (_, answer, _) in done.items():
        assert answer['code'] == 0 and answer['data']['error'] == '', answer
        m = re.search(r'<<RESULT>>(.*)<<RESULT>>', answer['data']['stdout'], re.S)
        assert m and json.loads(m.group(1)) == {'tag': i}, answer
    # Only the overflow is refused: never more than CLIENTS - max_requests, and at least one when all
    # came at once (a client late enough to find a slot freed succeeds instead, which is also right).
    assert 1 <= len(refused) <= CLIENTS - MAX_REQUESTS, (len(refused), len(done))
    # ... and at once: every refusal came back before the first run could finish.
    first_done = min(t for _, _, t in done.values())
    assert all(t < first_done for _, _, t in refused.values()), 'a 503 came after a run had finished'
    # The runs that waited longest waited past the old bound, and were served: the queue held them.
    assert len(done) >= MAX_REQUESTS
    assert queue_server.healthy()


# ---------------------------------------------------------------------------------------- dependencies

def canonical(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def test_dependencies_speak_pip(server):
    r = requests.get(server.url + '/v1/sandbox/dependencies', params={'language': 'python3'}, headers=HEADERS)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body['code'] == 0 and body['message'] == 'success', body
    deps = {canonical(d['name']): d['version'] for d in body['data']['dependencies']}
    assert not [n for n in deps if n.startswith('python3-')], f'Debian names in the list: {sorted(deps)}'
    wanted = ['requests', 'httpx', 'jinja2']
    assert all(n in deps for n in wanted), sorted(deps)
    # The versions are what the packages say of themselves, as a run sees them.
    probe = ('import importlib.metadata as m, json\n'
             f'print(json.dumps({{n: m.version(n) for n in {wanted!r}}}))\n')
    stdout = dify_execute_code(server.url, 'python3', '', probe)
    assert json.loads(stdout) == {n: deps[n] for n in wanted}
    # A Debian revision (-1) or epoch (1:) would be dpkg's version. A "+dfsg" alone is no sign of it:
    # Debian 13's pandas carries 2.2.3+dfsg in its own metadata, which pip and runs see too.
    for version in deps.values():
        assert not re.search(r'-\d+$|^\d+:', version), f'a Debian version: {version}'
