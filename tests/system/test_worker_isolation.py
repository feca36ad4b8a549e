"""Issue 24 item 4 under a real systemd: one socket-activated difysandbox@ instance cannot read another's
memory or environment. Both run as difysandbox-worker; systemd's execve() after User= left them dumpable,
so another process of that user could open /proc/PID/mem and environ. The worker makes itself
non-dumpable before it reads its connection (src/worker/worker-filter.c)."""

import json
import socket

from test_privsep import instance_pids

# Opens each path as difysandbox-worker and reads a byte: "read" or the errno's name, as JSON.
PROBE = r"""
import errno, json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.read(fd, 1)
            out[path] = "read"
        finally:
            os.close(fd)
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


def keep_alive_connection():
    s = socket.create_connection(("127.0.0.1", 8194), timeout=30)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"200 OK" in s.recv(4096)
    return s


def test_one_instance_cannot_read_anothers_memory_or_environment(container):
    a, b = keep_alive_connection(), keep_alive_connection()
    try:
        pids = instance_pids(container)
        assert len(pids) >= 2, f"expected an instance per open connection: {pids}"
        # The newest instance that is still there when probed: one of an earlier test's connection may
        # be ending meanwhile (ENOENT then says nothing).
        for target in reversed(pids):
            paths = f"/proc/{target}/mem /proc/{target}/environ"
            got = json.loads(container.sh(
                "setpriv --reuid difysandbox-worker --regid difysandbox-worker --clear-groups -- "
                f"/usr/bin/python3 -c '{PROBE}' {paths}").stdout)
            if container.sh(f"test -d /proc/{target}", check=False).returncode == 0:
                break
        # A dumpable worker's mem opens (its read at offset 0 then fails with EIO) and environ reads.
        assert got and all(v in ("EACCES", "EPERM") for v in got.values()), got
        owners = container.sh(f"stat -c %U /proc/{target}/mem /proc/{target}/environ").stdout.split()
        assert owners == ["root", "root"], f"a dumpable worker's files are its user's: {owners}"
    finally:
        a.close()
        b.close()
