"""Issue 24, "An answer's memory is bounded". A run that wrote 4 MiB - 1 of \\x01 to each stream and exited 1
answered 75.5 MB of JSON (the error repeated stderr, each byte became \\u0001), built whole and copied, and
eight clients that never read their answers grew the workers by 336-1133 MiB, outside every cgroup. Now
the answer is made 64 KiB at a time as it is sent (src/worker/answer.c) and the error keeps at most the
last 256 KiB of stderr, so a worker holds its two outputs, that much, and little else.

Issue 39: Dify shows the error, never our stderr key, to its user, so a 64 KiB traceback reaches it whole;
only beyond 256 KiB (ANSWER_ERROR_TAIL) is the error cut, and it keeps the end.

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
# What one worker may hold with an unread answer: its two outputs, the error's copy of stderr's end (at most
# ERROR_TAIL), and what any idle worker holds (about 3.5 MiB RSS, measured, most of it shared with serve)
# plus libmicrohttpd's buffers, rounded up. The same figure is in docs/security.md.
ERROR_TAIL = 256 << 10  # ANSWER_ERROR_TAIL, src/worker/answer.h
WORKER_BOUND = 2 * OUTPUT_MAX + ERROR_TAIL + (8 << 20)

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


LINE = 'warning: line %06d of a long stderr\n'  # 36 bytes: a warning printed in a loop


def stderr_lines(size):
    return ''.join(LINE % i for i in range(size // len(LINE) + 1))[:size]


def run_writing_stderr(server, size, status):
    code = ('import sys\n'
            f'sys.stderr.write("".join({LINE!r} % i for i in range({size // len(LINE) + 1}))[:{size}])\n'
            f'sys.exit({status})\n')
    data = server.run(code).json()['data']
    assert data['exit_code'] == status
    assert data['stderr'] == stderr_lines(size)  # stderr itself is whole
    return data['error']


def test_error_keeps_a_64k_stderr_whole(server):
    error = run_writing_stderr(server, 64 << 10, 1)
    assert error == 'process exited with code 1\n' + stderr_lines(64 << 10)  # all of it, no cut line


def test_error_cuts_a_longer_stderr_and_keeps_its_end(server):
    size = ERROR_TAIL + 100000
    error = run_writing_stderr(server, size, 3)
    marker = f'[{size - ERROR_TAIL} bytes cut: the error keeps the end of stderr]\n'  # how much was left out
    assert error == 'process exited with code 3\n' + marker + stderr_lines(size)[-ERROR_TAIL:]


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
