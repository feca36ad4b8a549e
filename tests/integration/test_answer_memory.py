"""Issue 24, "An answer's memory is bounded". A run that wrote 4 MiB - 1 of \\x01 to each stream and exited 1
answered 75.5 MB of JSON (the error repeated stderr, each byte became \\u0001), built whole and copied, and
eight clients that never read their answers grew the workers by 336-1133 MiB, outside every cgroup. Now
the answer is made 64 KiB at a time as it is sent (src/worker/answer.c) and the error keeps only the last
4 KiB of stderr, so a worker holds its two outputs and little else.

Bounded: 64 connections from 127.0.0.5 (one peer's share of serve's workers), each one run with
output_max 1 MiB, small receive buffers, never read; about a minute at most.
"""

import json
import os
import socket
import time

import pytest

from serve_helpers import API_KEY, start_server

OUTPUT_MAX = 1 << 20
CONNECTIONS = 64  # WORKERS_PER_SOURCE_MAX of src/cli/serve.c, MaxConnectionsPerSource= of the socket unit
# What one worker may hold with an unread answer: its two outputs, and what any idle worker holds (about
# 3.5 MiB RSS, measured, most of it shared with serve) plus libmicrohttpd's buffers, rounded up. The same
# figure is in docs/security.md.
WORKER_BOUND = 2 * OUTPUT_MAX + (8 << 20)
ERROR_TAIL = 4096  # ANSWER_ERROR_TAIL, src/worker/answer.h

FLOOD_CODE = ('import sys\n'
              f'sys.stdout.write("\\x01" * {OUTPUT_MAX - 1}); sys.stdout.flush()\n'
              f'sys.stderr.write("\\x01" * {OUTPUT_MAX - 1}); sys.stderr.flush()\n'
              'sys.exit(1)\n')


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    state = tmp_path_factory.mktemp('state')
    os.chmod(state.parent, 0o755)
    os.chmod(state, 0o755)
    s = start_server({'state_dir': str(state), 'uid_min': 27200, 'uid_max': 27299, 'output_max': OUTPUT_MAX,
                      'max_requests': CONNECTIONS + 8, 'max_workers': 16, 'worker_timeout': 20})
    yield s
    s.stop()
    s.cleanup()


def rss(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def test_error_keeps_only_the_tail_of_stderr(server):
    code = ('import sys\n'
            'sys.stderr.write("".join("line %d\\n" % i for i in range(20000)))\n'
            'sys.exit(3)\n')
    r = server.run(code)
    data = r.json()['data']
    lines = ''.join('line %d\n' % i for i in range(20000))
    assert data['stderr'] == lines  # stderr itself is whole
    assert data['exit_code'] == 3
    head = 'process exited with code 3\n'
    assert data['error'].startswith(head + '[')
    assert data['error'].endswith(lines[-ERROR_TAIL:])
    assert len(data['error']) <= len(head) + 80 + ERROR_TAIL, len(data['error'])
    cut = int(data['error'][len(head) + 1:].split(' ', 1)[0])
    assert cut == len(lines) - ERROR_TAIL  # the line says how much was left out


def test_unread_answers_hold_bounded_memory(server):
    body = json.dumps({'language': 'python3', 'code': FLOOD_CODE}).encode()
    request = (b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode()
               + b'\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
    conns = []
    try:
        for _ in range(CONNECTIONS):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel takes little of an answer
            s.bind(('127.0.0.5', 0))
            s.connect(('127.0.0.1', server.port))
            s.sendall(request)
            conns.append(s)
        time.sleep(0.5)
        base = min(rss(p) for p in server.workers())  # a worker before its answer
        # Until every run is done and its worker holds the answer (a worker waiting for its run holds no
        # output), and the workers' memory no longer grows; within the 60 s after which a worker drops an
        # answer its client does not take.
        deadline, last, steady, total, holding = time.monotonic() + 50, -1, 0, 0, []
        while time.monotonic() < deadline and (len(holding) < CONNECTIONS or steady < 3):
            time.sleep(1)
            workers = server.workers()
            total = sum(rss(p) for p in workers)
            holding = [p for p in workers if rss(p) >= base + OUTPUT_MAX * 3 // 2]
            steady = steady + 1 if total == last else 0
            last = total
        peek = conns[0].recv(200)
    finally:
        for s in conns:
            s.close()
    assert peek.startswith(b'HTTP/1.1 200'), peek  # the runs ran and their answers began
    assert len(holding) >= CONNECTIONS * 3 // 4, f'{len(holding)} of {len(workers)} workers hold an answer'
    bound = CONNECTIONS * WORKER_BOUND
    print(f'{len(workers)} workers hold {total / 2**20:.0f} MiB (bound {bound / 2**20:.0f} MiB)')
    assert total <= bound, f'{len(workers)} workers hold {total / 2**20:.0f} MiB, above {bound / 2**20:.0f} MiB'
