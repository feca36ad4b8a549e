"""A flood of unauthenticated keep-alive connections and a legitimate client beside it (issue 24, item 2),
shared by the integration tier (`difysandbox serve`) and the system tier (difysandbox.socket under systemd).
Each flood connection asks for GET /health without a key every PING_SECONDS and is made again at once when
the server closes it. Bounded: the caller sets the peers and connections per peer, aims at loopback only,
and stops the flood with its event."""

import json
import selectors
import socket
import time

PING = b'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'
PING_SECONDS = 1.5


def read_answer(s, deadline):
    """One HTTP answer with a Content-Length body from s, or b'' when the server closed first."""
    data = b''
    while True:
        head, sep, rest = data.partition(b'\r\n\r\n')
        if sep:
            length = [int(line.split(b':')[1]) for line in head.split(b'\r\n')
                      if line.lower().startswith(b'content-length:')]
            if length and len(rest) >= length[0]:
                return data
        s.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = s.recv(65536)
        if not chunk:
            return b''
        data += chunk


def flood(port, stop, stats, peers, per_peer):
    """Each of peers holds per_peer connections that ask for /health every PING_SECONDS without a key; a
    connection the server closes is made again at once."""
    sel = selectors.DefaultSelector()

    def connect(peer):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((peer, 0))
        s.connect_ex(('127.0.0.1', port))
        sel.register(s, selectors.EVENT_WRITE, {'peer': peer, 'next': 0.0})
        stats['connections'] += 1

    assert all(p.startswith("127.") for p in peers), "a flood aims at loopback only"
    for peer in peers:
        for _ in range(per_peer):
            connect(peer)
    while not stop.is_set():
        now = time.monotonic()
        for key, events in sel.select(timeout=0.1):
            s, state = key.fileobj, key.data
            try:
                if events & selectors.EVENT_WRITE:
                    s.send(PING)
                    sel.modify(s, selectors.EVENT_READ, state)
                    continue
                if s.recv(65536):
                    stats['answers'] += 1
                    state['next'] = now + PING_SECONDS
                    continue
            except OSError:
                pass
            sel.unregister(s)
            s.close()
            stats['closed'] += 1
            connect(state['peer'])
        for key in list(sel.get_map().values()):  # the next ping of every connection that is due
            state = key.data
            if state['next'] and state['next'] <= now:
                state['next'] = 0.0
                sel.modify(key.fileobj, selectors.EVENT_WRITE, state)
    for key in list(sel.get_map().values()):
        key.fileobj.close()


def legitimate_client(port, api_key, source=None):
    """Dify on a new connection (from source, else 127.0.0.1): GET /health, then a run on the same connection. Returns
    (seconds to the first answer, the first answer, seconds to the run's answer, the run's answer)."""
    body = json.dumps({'language': 'python3', 'code': 'print(6 * 7)'}).encode()
    key = b'X-Api-Key: ' + api_key.encode() + b'\r\n'
    run = (b'POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\n' + key
           + b'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body) + body)
    start = time.monotonic()
    health = answer = b''
    health_seconds = run_seconds = None
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=10,
                                      source_address=(source, 0) if source else None) as s:
            s.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\n' + key + b'\r\n')
            health = read_answer(s, start + 10)
            health_seconds = time.monotonic() - start
            s.sendall(run)
            answer = read_answer(s, time.monotonic() + 30)
            run_seconds = time.monotonic() - start - health_seconds
    except OSError as e:
        answer = repr(e).encode()
    return health_seconds, health, run_seconds, answer
