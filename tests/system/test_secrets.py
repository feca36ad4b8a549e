"""Issue 43, finding 3: no configured secret is readable by an unprivileged local user. The index URL and
the proxies hold a password; while a dependency job runs, a user reads every property of its unit
(`systemctl show --all`) and every /proc/PID/cmdline and environ it may open, and finds neither. The
job's Log and the journal have the password masked. The secrets still do their work: pip fetches through
the proxy, which sees the proxy's credentials."""

import base64
import shlex
import time

import pytest

from test_manager import NOBODY, Index, busctl, call, set_config, wait_job, JOB_IFACE, BUS

INDEX_SECRET = "Idx-s3cret-9f2"
PROXY_SECRET = "Pr0xy-s3cret-7c1"
SECRETS = (INDEX_SECRET, PROXY_SECRET)


class ProxyIndex(Index):
    """The test index, also a plain HTTP proxy for itself: a request for an absolute URI is a proxied
    one, whose Proxy-Authorization is kept."""

    def __init__(self):
        super().__init__()
        self.proxy_auth = []
        handler = self.server.RequestHandlerClass
        base_get = handler.do_GET
        outer = self

        def do_GET(h):
            if h.path.startswith("http://"):
                outer.proxy_auth.append(h.headers.get("Proxy-Authorization", ""))
                h.path = "/" + h.path.split("/", 3)[3]
            return base_get(h)

        handler.do_GET = do_GET


@pytest.fixture(scope="module")
def secret_index(container):
    idx = ProxyIndex()
    idx.add("dsb-slow", "2.0", "dsb_slow", "VALUE = 'slow'\n")
    idx.slow.add("dsb-slow")
    port = idx.url.split(":")[2].split("/")[0]
    set_config(container, f"python_pip_mirror_url: http://alice:{INDEX_SECRET}@127.0.0.1:{port}/simple/\n"
                          f"proxy.http: http://bob:{PROXY_SECRET}@127.0.0.1:{port}\n"
                          f"proxy.https: http://bob:{PROXY_SECRET}@127.0.0.1:{port}\n")
    call(container, "ReloadConfig")
    yield idx
    idx.close()
    set_config(container, "")
    call(container, "ReloadConfig")


def readable_by_nobody(container, unit):
    """Everything an unprivileged user reads of the running job: its unit's properties, and the command
    lines and environments of every process that it may open."""
    script = (f"systemctl show --all {unit}; "
              "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do "
              "  cat $f 2>/dev/null | tr '\\0' '\\n'; done")
    return container.sh(f"{NOBODY} sh -c {shlex.quote(script)}").stdout


def test_no_secret_is_readable_by_a_user_while_a_job_runs(container, secret_index):
    secret_index.slow_event.clear()
    job = call(container, "InstallDependencies", "sas", "python3", "1", "dsb-slow")["data"][0]
    try:
        deadline = time.time() + 60
        unit = ""
        while time.time() < deadline and not unit:
            out = container.sh("systemctl list-units --no-legend --plain 'difysandbox-deps-*.service'").stdout
            unit = out.split()[0] if out.strip() else ""
            time.sleep(0.1)
        assert unit, "no installer unit appeared"
        # pip is waiting on the slow project: through the proxy, with the index's credentials
        while time.time() < deadline and not secret_index.proxy_auth:
            time.sleep(0.1)
        assert secret_index.proxy_auth, "pip never reached the index through the proxy"
        seen = readable_by_nobody(container, unit)
        assert "ExecStart=" in seen and unit.split(".")[0] in seen  # the scan did read the unit
        for secret in SECRETS:
            assert secret not in seen, f"{secret!r} is readable by nobody:\n" + \
                "\n".join(l for l in seen.splitlines() if secret in l)
        # The same scan as root finds the proxy's password in pip's environment: it would have found
        # it above, had it been readable.
        as_root = container.sh("for f in /proc/[0-9]*/environ; do cat $f 2>/dev/null | tr '\\0' '\\n'; done").stdout
        assert PROXY_SECRET in as_root
        log = busctl(container, "get-property", BUS, job, JOB_IFACE, "Log", user=NOBODY)["data"]
        for secret in SECRETS:
            assert secret not in log, log
    finally:
        secret_index.slow_event.set()
    log = wait_job(container, job)
    for secret in SECRETS:
        assert secret not in log, log
    # the proxy saw the credentials of the configuration: the secrets still reach pip
    assert base64.b64encode(f"bob:{PROXY_SECRET}".encode()).decode() in " ".join(secret_index.proxy_auth)
    journal = container.journal("-o", "cat", "-u", "difysandbox-deps-*", "-u", "difysandbox-manager.service")
    assert journal.strip(), "no journal of the job"
    for secret in SECRETS:
        assert secret not in journal, "\n".join(l for l in journal.splitlines() if secret in l)


WORKER_KEY = "h43-Worker-K3y-5d8a0c"

SCAN = r'''
import re, sys
pid, needle = sys.argv[1], sys.argv[2].encode()
found = []
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if line.split()[1][0] != "r":
            continue
        try:
            mem.seek(lo)
            if needle in mem.read(hi - lo):
                found.append(line.strip())
        except (OSError, ValueError, OverflowError):
            pass
print("\n".join(found))
'''


# Prints the app.key_digest texts in a process's memory that match the key given.
DIGESTS = r'''
import hashlib, re, sys
pid, key = sys.argv[1], sys.argv[2].encode()
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if line.split()[1][0] != "r":
            continue
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        for m in re.finditer(rb"sha256:([0-9a-f]{32}):([0-9a-f]{64})", data):
            if hashlib.sha256(bytes.fromhex(m.group(1).decode()) + key).hexdigest() == m.group(2).decode():
                print(m.group(0).decode())
'''


def test_a_worker_holds_no_key_and_no_proxy_password(container):
    """The runner hands a worker a digest of app.key and no proxy: a live worker's whole memory, read as
    root, holds neither the key nor the proxy's password (its client has not sent the key)."""
    import socket

    container.sh("printf 'app:\\n  key: %s\\nproxy.http: http://bob:%s@127.0.0.1:9\\n' "
                 f"{WORKER_KEY} {PROXY_SECRET} > /etc/difysandbox/config.d/99-secrets-test.yaml")
    try:
        call(container, "ReloadConfig")
        with socket.create_connection(("127.0.0.1", 8194), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"200" in s.recv(4096).split(b"\r\n")[0]
            units = container.sh("systemctl list-units --no-legend --plain 'difysandbox@*.service'").stdout.split()
            pids = [container.sh(f"systemctl show -p MainPID --value {u}").stdout.strip()
                    for u in units if u.endswith(".service")]
            pids = [p for p in pids if p not in ("", "0")]
            assert pids, "no live worker"
            for pid in pids:
                for secret in (WORKER_KEY, PROXY_SECRET):
                    found = container.sh(f"python3 -c {shlex.quote(SCAN)} {pid} {secret}").stdout.strip()
                    assert not found, f"worker {pid} holds {secret!r} in:\n{found}"
            # the scan reads what is there: some worker holds a digest of this very key
            assert any(container.sh(f"python3 -c {shlex.quote(DIGESTS)} {pid} {WORKER_KEY}").stdout.strip()
                       for pid in pids), "no worker holds the digest of the configured key"
    finally:
        container.sh("rm -f /etc/difysandbox/config.d/99-secrets-test.yaml")
        call(container, "ReloadConfig")
