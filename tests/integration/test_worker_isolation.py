"""Issue 24 item 4: one worker must not read another's memory. Every worker of `difysandbox serve` (and
every difysandbox@ instance under systemd) runs as the same user, difysandbox-worker, and its filter allows
read-only opens and pread64. A dumpable worker's /proc/PID/mem and environ belong to that user, so a worker
taken over by its client could read another connection's code, results and API key there. Workers are
non-dumpable (src/worker/worker-filter.c): the kernel then hands those files to root and refuses them to
the other workers.

Under serve, setresuid() in the forked worker already left it non-dumpable on a host with
fs.suid_dumpable=0, so this test guards the property rather than catching the old bug there; under systemd,
execve() after User= made the worker dumpable, and tests/system/test_privsep.py catches that.
"""

import errno
import os
import pwd

import pytest
import requests

from serve_helpers import start_server

WORKER_USER = 'difysandbox-worker'
# No prepared runs: this file looks at the workers only.
ENV = {'DIFYSANDBOX_POOL_SIZE_PYTHON3': '0', 'DIFYSANDBOX_POOL_SIZE_NODEJS': '0'}


@pytest.fixture(scope='module')
def server():
    s = start_server(env=ENV)
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f'difysandbox serve exited {rc} after SIGTERM'


def read_as(user, paths):
    """Forks a process with user's UID and GID and no groups (what a taken-over worker is) and tries to
    open and read one byte of each path. Returns {path: 'read' or the errno name}."""
    pw = pwd.getpwnam(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            out = []
            for path in paths:
                try:
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        os.read(fd, 1)
                        out.append('read')
                    finally:
                        os.close(fd)
                except OSError as e:
                    out.append(errno.errorcode.get(e.errno, str(e.errno)))
            os.write(w, '\n'.join(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b''
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return dict(zip(paths, data.decode().split('\n')))


def two_workers(server, a, b):
    """Two live keep-alive connections: serve has a worker for each."""
    assert a.get(server.url + '/health').status_code == 200
    assert b.get(server.url + '/health').status_code == 200
    workers = server.workers()
    assert len(workers) == 2, f'expected one worker per connection: {workers}'
    return workers


def test_a_worker_cannot_read_another_workers_memory_or_environment(server):
    with requests.Session() as a, requests.Session() as b:
        first, second = two_workers(server, a, b)
        uid = pwd.getpwnam(WORKER_USER).pw_uid
        for pid in (first, second):
            assert os.stat(f'/proc/{pid}').st_uid == uid, 'the workers must be of the user the test takes'
            # Non-dumpable: the kernel gives these files to root, whatever the process's UID.
            for name in ('mem', 'environ'):
                assert os.stat(f'/proc/{pid}/{name}').st_uid == 0, (pid, name)
        got = read_as(WORKER_USER, [f'/proc/{second}/mem', f'/proc/{second}/environ'])
        assert all(v in ('EACCES', 'EPERM') for v in got.values()), got
        # Both still serve: the property costs the workers nothing.
        assert a.get(server.url + '/health').status_code == 200
        assert b.get(server.url + '/health').status_code == 200
