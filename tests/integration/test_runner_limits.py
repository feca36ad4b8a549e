"""Issue 24, item 3: the runner survives running out of file descriptors.

A process of the worker user holding hundreds of connections to the runner socket made accept() fail with
EMFILE; the runner logged it and returned, the loop spun (~80k journal lines) and new workers got no
configuration. Under `serve`, keep-alive connections filled the runner's table; the next hand-off came
with MSG_CTRUNC, the runner took it for serve's end and exited, and every run in flight got -500.

Each test puts a bounded load on a runner of its own (a difysandbox-runner started the way
difysandbox-runner.socket starts it, or serve's) and stops by itself; it checks that the runner keeps its
PID, logs a few lines rather than thousands, and answers a new client during or right after the load.
"""

import array
import fcntl
import os
import pwd
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest
import requests

from serve_helpers import API_KEY, HEADERS, start_server, worker_binary

MAGIC = 0x31525344
REQUEST = struct.Struct('<IHHIIQ')  # RunnerRequestWire
REPLY = struct.Struct('<IHHiIiI3I5Q32s6Q')  # RunnerReplyWire
OP_CONFIG, OP_RUN = 1, 2
STATUS_RAN, STATUS_FAILED, STATUS_CONFIG = 0, 1, 4
LANGUAGE_PYTHON3 = 0
PER_PEER_MAX = 4  # runner.c's CONNECTIONS_PER_PEER_MAX
WORKER_USER = 'difysandbox-worker'
# A UID range and state of these tests' own: another instance (another checkout's tests) may hold the default.
UID_MIN, UID_MAX = 23000, 23099


def own_instance(directory):
    return {'uid_min': UID_MIN, 'uid_max': UID_MAX, 'state_dir': os.path.join(directory, 'state')}


# Lines a flood may cost: a warning when an episode begins (episode.h), not one per event.
FD_WARNING = re.compile(r'Out of file descriptors|Cannot accept a worker connection')


def soft_nofile(pid):
    with open(f'/proc/{pid}/limits') as f:
        return int(next(line for line in f if line.startswith('Max open files')).split()[3])


def set_soft_nofile(pid, n):
    """Only the soft limit: raising it back needs no CAP_SYS_RESOURCE (which a container may lack)."""
    subprocess.run(['prlimit', f'--pid={pid}', f'--nofile={n}:'], check=True)


def worker_ids():
    try:
        pw = pwd.getpwnam(WORKER_USER)
    except KeyError:
        pytest.skip(f'no user {WORKER_USER} (systemd-sysusers difysandbox.conf)')
    return pw.pw_uid, pw.pw_gid


def ask(sock, op, payload_fd=None, language=0, code_len=0, timeout=10):
    """One request on a runner connection; returns (status, error, parts) of the reply."""
    wire = REQUEST.pack(MAGIC, 1, op, language, 0, code_len)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [payload_fd]))] if payload_fd else []
    sock.sendmsg([wire], anc)
    sock.settimeout(timeout)
    data, ancdata, _, _ = sock.recvmsg(512, socket.CMSG_SPACE(8))
    fds = []
    for level, kind, extra in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += array.array('i', extra[:len(extra) - len(extra) % 4])
    fields = REPLY.unpack(data)
    assert fields[0] == MAGIC, fields
    status, error, part_len = fields[2], fields[3], fields[-6:]
    parts = []
    if fds:
        blob = os.pread(fds[0], sum(part_len), 0)  # its writer left the offset at the end
        os.close(fds[0])
        offset = 0
        for n in part_len:
            parts.append(blob[offset:offset + n].decode(errors='replace'))
            offset += n
    for fd in fds[1:]:
        os.close(fd)
    return status, error, parts


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    s.connect(path)
    return s


def run_code(path, code):
    """A run of python3 code on a new connection: (status, stdout)."""
    data = code.encode()
    fd = os.memfd_create('code', os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, data)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
                    | fcntl.F_SEAL_SEAL)
        with connect(path, timeout=60) as s:
            status, error, parts = ask(s, OP_RUN, payload_fd=fd, language=LANGUAGE_PYTHON3,
                                       code_len=len(data), timeout=60)
    finally:
        os.close(fd)
    return status, (parts[0] if parts else ''), error


def alive(sock):
    """Whether the runner still holds its end: no hang-up, no end of file."""
    r, _, _ = select.select([sock], [], [], 0)
    if not r:
        return True
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b''
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False


def hold_connections(path, n, uid, gid):
    """A child process of the worker user that opens up to n connections to the runner and holds them until
    released. Returns (pid, result_read_fd, release_write_fd); the child writes how many it opened, then,
    after a second, how many the runner still holds."""
    result_r, result_w = os.pipe()
    release_r, release_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(result_r)
            os.close(release_w)
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            held = []
            for _ in range(n):
                try:
                    held.append(connect(path, timeout=2))
                except OSError:
                    break
            os.write(result_w, f'{len(held)}\n'.encode())
            time.sleep(1)
            os.write(result_w, f'{sum(alive(s) for s in held)}\n'.encode())
            os.read(release_r, 1)  # until released (or the test's end closes the pipe)
            code = 0
        finally:
            os._exit(code)
    os.close(result_w)
    os.close(release_r)
    return pid, result_r, release_w


def read_counts(fd, n=2, timeout=30):
    out, deadline = b'', time.monotonic() + timeout
    while out.count(b'\n') < n and time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            out += chunk
    return [int(x) for x in out.split()]


def release(children):
    for pid, result_r, release_w in children:
        os.close(release_w)
        os.close(result_r)
    for pid, _, _ in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


class Runner:
    """difysandbox-runner behind a socket made as difysandbox-runner.socket makes it (systemd-socket-activate)."""

    def __init__(self):
        self.binary = os.path.join(os.path.dirname(worker_binary()), '..', 'runner', 'difysandbox-runner')
        if not os.access(self.binary, os.X_OK):
            self.binary = os.path.join(os.path.dirname(worker_binary()), 'difysandbox-runner')
        if not os.access(self.binary, os.X_OK):
            pytest.skip('no difysandbox-runner next to difysandbox-worker (set DIFYSANDBOX_WORKER)')
        self.dir = tempfile.mkdtemp(prefix='difysandbox-runner-')
        os.chmod(self.dir, 0o755)  # the worker user reaches the socket, as under /run/difysandbox
        self.path = os.path.join(self.dir, 'runner.sock')
        self.log_path = os.path.join(self.dir, 'runner.log')
        self.log = open(self.log_path, 'wb')
        own = own_instance(self.dir)
        self.proc = subprocess.Popen(['systemd-socket-activate', '--seqpacket', '-l', self.path,
                                      f'--setenv=API_KEY={API_KEY}', f'--setenv=DIFYSANDBOX_UID_MIN={UID_MIN}',
                                      f'--setenv=DIFYSANDBOX_UID_MAX={UID_MAX}',
                                      f'--setenv=DIFYSANDBOX_STATE_DIR={own["state_dir"]}', self.binary],
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 15
        while True:
            try:
                os.chmod(self.path, 0o666)  # SocketGroup= in the unit; the runner checks the peer again
                with connect(self.path) as s:
                    assert ask(s, OP_CONFIG)[0] == STATUS_CONFIG
                break
            except (OSError, socket.timeout):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError('difysandbox-runner did not answer:\n' + self.log_text())
                time.sleep(0.1)

    def log_text(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def fds(self):
        return len(os.listdir(f'/proc/{self.proc.pid}/fd'))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def runner():
    r = Runner()
    yield r
    r.stop()


def test_one_process_holds_at_most_a_few_runner_connections(runner):
    """The attack of the issue: one process of the worker user opens hundreds of connections. It keeps a
    few; other workers (other processes) still get their configuration; the runner keeps its PID."""
    uid, gid = worker_ids()
    child = hold_connections(runner.path, 300, uid, gid)
    try:
        opened, held = read_counts(child[1])
        assert opened > PER_PEER_MAX, opened
        assert held <= PER_PEER_MAX, f'one process still holds {held} of its {opened} connections'
        # other workers are served meanwhile, the runner is the same process
        for _ in range(5):
            with connect(runner.path) as s:
                assert ask(s, OP_CONFIG)[0] == STATUS_CONFIG
        assert runner.proc.poll() is None, runner.log_text()
    finally:
        release([child])
    refusals = runner.log_text().count('Refusing more connections to the runner from PID')
    assert refusals == 1, runner.log_text()[-3000:]  # one warning for the episode, not one per connection


def test_runner_survives_emfile_on_accept(runner):
    """accept() fails with EMFILE (the table is lowered under the runner, as a leak or a low LimitNOFILE=
    would do): no spin, a bounded log, and a new client is still answered, by shedding the oldest idle
    connection; runs work again once the pressure ends."""
    uid, gid = worker_ids()
    time.sleep(3)  # the warm pool has filled: its slots' descriptors are counted below
    soft = soft_nofile(runner.proc.pid)
    set_soft_nofile(runner.proc.pid, runner.fds() + 8)
    children = []
    try:
        # distinct processes, each within the per-process allowance: only the table bounds them
        for _ in range(12):
            children.append(hold_connections(runner.path, PER_PEER_MAX, uid, gid))
        for child in children:
            read_counts(child[1], n=1)
        started = time.monotonic()
        with connect(runner.path) as s:  # answered during the pressure, thanks to shedding
            assert ask(s, OP_CONFIG, timeout=10)[0] == STATUS_CONFIG
        assert time.monotonic() - started < 10
        time.sleep(2)  # an old runner would spin and log meanwhile
        assert runner.proc.poll() is None, runner.log_text()[-3000:]
        warnings = [line for line in runner.log_text().splitlines() if FD_WARNING.search(line)]
        assert 1 <= len(warnings) <= 3, f'{len(warnings)} lines:\n' + '\n'.join(warnings[:20])
    finally:
        release(children)
        set_soft_nofile(runner.proc.pid, soft)  # the pressure ends: a run's handler needs a few more
    status, stdout, error = run_code(runner.path, 'print(6 * 7)')
    assert (status, stdout) == (STATUS_RAN, '42\n'), (status, stdout, error, runner.log_text()[-3000:])


# ------------------------------------------------------------------------------ under serve

def keep_alive_connections(server, n):
    """n keep-alive HTTP connections, each with a worker (and its line to the runner) behind it. Their
    /health carries the key: an authenticated connection keeps its worker for the idle timeout, whether
    or not the workers can count connections in this instance's state_dir (a mkdtemp, 0700)."""
    conns = []
    for _ in range(n):
        c = socket.create_connection(('127.0.0.1', server.port), timeout=10)
        c.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\nX-Api-Key: ' + API_KEY.encode() + b'\r\n\r\n')
        data = b''
        try:
            while b'"ok"' not in data:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        conns.append(c)
    return conns


def test_serve_runner_survives_a_full_descriptor_table():
    """The hand-off of a new connection comes with MSG_CTRUNC once the runner's table is full: one lost
    connection, not the runner's end. The run in flight is answered, the runner keeps its PID, and once the
    pressure ends a new connection's run is answered."""
    directory = tempfile.mkdtemp(prefix='difysandbox-limits-')
    s = start_server(config=own_instance(directory))
    conns = []
    try:
        runner = s.runner()
        time.sleep(3)  # the warm pool has filled
        fds = len(os.listdir(f'/proc/{runner}/fd'))
        result = {}

        def long_run():
            result['r'] = s.run('import time\ntime.sleep(4)\nprint("survived")')

        t = threading.Thread(target=long_run)
        t.start()
        time.sleep(1)  # it is running
        soft = soft_nofile(runner)
        set_soft_nofile(runner, fds + 8)
        conns = keep_alive_connections(s, 30)
        t.join(timeout=60)
        r = result['r']
        assert r.status_code == 200 and r.json()['code'] == 0, r.text
        assert r.json()['data']['stdout'] == 'survived\n', r.text
        assert s.runner() == runner, 'the runner was restarted:\n' + s.log_text()[-3000:]
        warnings = [line for line in s.log_text().splitlines() if FD_WARNING.search(line)]
        assert 1 <= len(warnings) <= 3, f'{len(warnings)} lines:\n' + '\n'.join(warnings[:20])
        for c in conns:
            c.close()
        conns = []
        set_soft_nofile(runner, soft)  # the pressure ends
        deadline = time.monotonic() + 10
        while True:  # the workers of the closed connections end, their lines with them
            try:
                r = s.run('print(6 * 7)')
                if r.status_code == 200 and r.json()['data']['stdout'] == '42\n':
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, (r.status_code, r.text)
            time.sleep(0.5)
        assert s.runner() == runner
    finally:
        for c in conns:
            c.close()
        s.stop()
        s.cleanup()
        shutil.rmtree(directory, ignore_errors=True)


def test_serve_survives_emfile_on_its_own_accept():
    """serve's own accept() fails with EMFILE: it pauses and retries, logs once for the episode (not every
    100 ms), and serves the waiting connections once descriptors are back."""
    directory = tempfile.mkdtemp(prefix='difysandbox-limits-')
    s = start_server(config=own_instance(directory))
    waiting = []
    try:
        fds = len(os.listdir(f'/proc/{s.proc.pid}/fd'))
        soft = soft_nofile(s.proc.pid)
        set_soft_nofile(s.proc.pid, fds)
        for _ in range(3):
            c = socket.create_connection(('127.0.0.1', s.port), timeout=30)
            c.sendall(b'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
            waiting.append(c)
        time.sleep(2)
        lines = [line for line in s.log_text().splitlines() if 'Cannot accept a connection' in line]
        assert len(lines) == 1, f'{len(lines)} lines:\n' + '\n'.join(lines[:20])
        set_soft_nofile(s.proc.pid, soft)
        for c in waiting:
            data = b''
            while b'"ok"' not in data:
                chunk = c.recv(65536)
                assert chunk, data
                data += chunk
        assert 'Accepting connections again after' in s.log_text()
        s.healthy()
    finally:
        for c in waiting:
            c.close()
        s.stop()
        s.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
