"""difysandbox-manager under a real systemd and D-Bus: the interface against dbus/, dependency jobs for
both languages from local package sources, failure handling, the data plane without the manager,
config reload, stats, the journal and the bus policy."""

import base64
import hashlib
import http.server
import io
import json
import os
import re
import shlex
import socket
import threading
import time
import xml.etree.ElementTree as ET
import zipfile

import pytest

from conftest import TOP, request, run

BUS = "org.difysandbox.Sandbox1"
PATH = "/org/difysandbox/Sandbox1"
IFACE = "org.difysandbox.Sandbox1.Manager"
JOB_IFACE = "org.difysandbox.Sandbox1.Job"
CONFIG = "/etc/difysandbox/config.yaml"
NOBODY = "setpriv --reuid=65534 --regid=65534 --clear-groups"


def busctl(container, *args, user="", check=True):
    cmd = f"{user} busctl --json=short -- " + " ".join(shlex.quote(a) for a in args)
    p = container.sh(cmd, check=check)
    return json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else p


def call(container, method, signature="", *args, user="", check=True):
    return busctl(container, "call", BUS, PATH, IFACE, method, *([signature, *args] if signature else []),
                  user=user, check=check)


def unwrap(v):
    """busctl's JSON of a variant-valued dict: {"key": {"type": ..., "data": ...}} -> {"key": data}."""
    return {k: x["data"] for k, x in v.items()}


def stats(container):
    return unwrap(call(container, "GetStats")["data"][0])


def wait_job(container, job, timeout=120):
    """Waits until the job object is gone (JobRemoved was sent with it). Returns the last Log seen."""
    deadline = time.time() + timeout
    log = ""
    while time.time() < deadline:
        p = container.sh(f"busctl --json=short get-property {BUS} {job} {JOB_IFACE} Log", check=False)
        if p.returncode != 0:
            return log
        log = json.loads(p.stdout)["data"]
        time.sleep(0.2)
    raise AssertionError(f"job {job} still running after {timeout} s; log so far:\n{log}")


def set_config(container, text):
    container.sh(f"mkdir -p /etc/difysandbox && cat > {CONFIG} <<'EOF'\n{text}\nEOF")


# ---------------------------------------------------------------------------- local package sources

def make_wheel(name, version, module, body):
    """A pure-Python wheel, written by hand: the module, METADATA, WHEEL and a RECORD with hashes."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{module}/__init__.py": body,
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: difysandbox-test\n"
                                   "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
            z.writestr(path, data)
        record.append(f"{dist}.dist-info/RECORD,,")
        z.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return f"{dist}-py3-none-any.whl", buf.getvalue()


class Index:
    """A PEP 503 simple index on loopback (the container shares the host's network). A project named
    in `slow` is answered only after `slow_event` is set, to keep an install in progress."""

    def __init__(self):
        self.projects = {}  # normalized name -> [(filename, bytes)]
        self.slow = set()
        self.slow_event = threading.Event()
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                parts = [p for p in self.path.split("/") if p]
                if len(parts) == 2 and parts[0] == "simple" and parts[1] in index.projects:
                    if parts[1] in index.slow:
                        index.slow_event.wait(120)
                    links = "".join(f'<a href="/files/{f}">{f}</a>\n' for f, _ in index.projects[parts[1]])
                    return self.reply(200, f"<html><body>{links}</body></html>".encode(), "text/html")
                if len(parts) == 2 and parts[0] == "files":
                    for files in index.projects.values():
                        for f, data in files:
                            if f == parts[1]:
                                return self.reply(200, data, "application/octet-stream")
                self.reply(404, b"not found", "text/plain")

            def reply(self, code, data, ctype):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, name, version, module, body):
        self.projects.setdefault(name, []).append(make_wheel(name, version, module, body))

    def close(self):
        self.slow_event.set()
        self.server.shutdown()


@pytest.fixture(scope="module")
def index(container):
    idx = Index()
    idx.add("dsb-demo", "1.0", "dsb_demo", "VALUE = 'demo 1.0'\n")
    idx.add("dsb-slow", "2.0", "dsb_slow", "VALUE = 'slow'\n")
    idx.slow.add("dsb-slow")
    # The index in the config the manager publishes; the requirement file stays empty.
    set_config(container, f"python_pip_mirror_url: {idx.url}\n")
    call(container, "ReloadConfig")
    yield idx
    idx.close()
    set_config(container, "")
    call(container, "ReloadConfig")


def generation(container, language):
    return stats(container)["DependencyGenerations"][language]


# ---------------------------------------------------------------------------- the interface

def normalized(element):
    """An interface element as comparable data: members, signatures, argument names and directions,
    property access and the annotations (change signalling, privileged methods)."""
    out = []
    for m in element:
        if m.tag not in ("method", "signal", "property"):
            continue
        args = tuple((a.get("name"), a.get("type"), a.get("direction", "in" if m.tag == "method" else None))
                     for a in m.findall("arg"))
        ann = tuple(sorted((a.get("name"), a.get("value")) for a in m.findall("annotation")))
        out.append((m.tag, m.get("name"), m.get("type"), m.get("access"), args, ann))
    return sorted(out, key=repr)


def xml_interfaces(text):
    root = ET.fromstring(text)
    return {i.get("name"): normalized(i) for i in root.findall("interface")}


def test_introspection_matches_the_xml_in_dbus_dir(container, index):
    with open(os.path.join(TOP, "dbus", "org.difysandbox.Sandbox1.xml")) as f:
        expected = xml_interfaces(f.read())
    live = xml_interfaces(container.sh(f"busctl introspect --xml-interface {BUS} {PATH}").stdout)
    assert live[IFACE] == expected[IFACE]

    # The job interface exists only while a job does: hold one in progress with the slow project.
    index.slow_event.clear()
    job = call(container, "InstallDependencies", "sas", "python3", "1", "dsb-slow")["data"][0]
    try:
        live_job = xml_interfaces(container.sh(f"busctl introspect --xml-interface {BUS} {job}").stdout)
        assert live_job[JOB_IFACE] == expected[JOB_IFACE]
        state = busctl(container, "get-property", BUS, job, JOB_IFACE, "State")["data"]
        assert state == "running"
        # The data plane does not wait for the control plane: runs work while the install hangs.
        for _ in range(3):
            assert run("print(6 * 7)")["stdout"] == "42\n"
        # One job per language at a time.
        p = call(container, "RefreshDependencies", "s", "python3", check=False)
        assert p.returncode != 0 and "already running" in p.stderr + p.stdout, p
    finally:
        index.slow_event.set()
    wait_job(container, job)
    assert run("import dsb_slow; print(dsb_slow.VALUE)")["stdout"] == "slow\n"


# ---------------------------------------------------------------------------- dependencies

def test_python_install_from_a_local_index_then_a_run_imports_it(container, index):
    before = generation(container, "python3")
    p = container.sh("difysandboxctl deps install python3 dsb-demo==1.0 </dev/null")
    assert "done" in p.stdout, p.stdout
    after = generation(container, "python3")
    assert after > before
    assert run("import dsb_demo; print(dsb_demo.VALUE)")["stdout"] == "demo 1.0\n"
    # The installed package is listed, by the manager and by the HTTP route.
    listed = call(container, "ListDependencies", "s", "python3")["data"][0]
    assert ["dsb-demo", "1.0"] in listed, listed
    status, body = request("GET", "/v1/sandbox/dependencies?language=python3")
    deps = json.loads(body)["data"]["dependencies"]
    assert {"name": "dsb-demo", "version": "1.0"} in deps
    # The generation is the installer user's, and a run cannot write into it.
    owner = container.sh(f"stat -c %U /var/lib/difysandbox/python3/packages/gen-{after}").stdout.strip()
    assert owner == "difysandbox-deps"
    out = run("import dsb_demo, os\n"
              "try:\n"
              "    open(os.path.join(os.path.dirname(dsb_demo.__file__), 'x'), 'w')\n"
              "    print('WROTE')\n"
              "except OSError as e:\n"
              "    print(type(e).__name__)\n")
    assert out["stdout"].strip() in ("PermissionError", "OSError"), out


def test_failed_install_keeps_the_current_generation_serving(container, index):
    container.sh("difysandboxctl deps install python3 dsb-demo </dev/null")
    before = generation(container, "python3")
    p = container.sh("difysandboxctl deps install python3 dsb-no-such-package </dev/null", check=False)
    assert p.returncode == 1, p
    assert "No matching distribution" in p.stdout + p.stderr, p
    assert generation(container, "python3") == before
    assert run("import dsb_demo; print(dsb_demo.VALUE)")["stdout"] == "demo 1.0\n"
    log = container.journal("-o", "cat", "MESSAGE_ID=c1d8a4f2b9e34d7a8e5b60f3a2c9d417", "RESULT=failed")
    assert "dsb-no-such-package" in log or "No matching distribution" in log, log[-2000:]


def test_nodejs_install_of_a_local_tarball_then_a_run_requires_it(container):
    pkg = "/srv/difysandbox-test/dsb-node-demo"
    container.sh(f"rm -rf {pkg} && mkdir -p {pkg} && cd {pkg} && "
                 "printf '%s' '{\"name\":\"dsb-node-demo\",\"version\":\"1.2.3\",\"main\":\"index.js\"}' "
                 "> package.json && echo 'module.exports = () => \"node demo\";' > index.js && "
                 "npm pack --silent >/dev/null && chmod -R a+rX /srv/difysandbox-test")
    before = generation(container, "nodejs")
    p = container.sh(f"difysandboxctl deps install nodejs {pkg}/dsb-node-demo-1.2.3.tgz </dev/null")
    assert "done" in p.stdout, p.stdout
    assert generation(container, "nodejs") > before
    out = run("console.log(require('dsb-node-demo')())", language="nodejs")
    assert out["stdout"] == "node demo\n", out
    listed = call(container, "ListDependencies", "s", "nodejs")["data"][0]
    assert ["dsb-node-demo", "1.2.3"] in listed, listed


def test_remove_dependencies_makes_a_generation_without_the_package(container, index):
    """Issue 14: RemoveDependencies / deps remove, a job like install: the package is gone from the new
    generation and from the runs that start after it, the other packages stay."""
    index.add("dsb-gone", "1.0", "dsb_gone", "VALUE = 'here'\n")
    container.sh("difysandboxctl deps install python3 dsb-gone dsb-demo </dev/null")
    assert run("import dsb_gone; print(dsb_gone.VALUE)")["stdout"] == "here\n"
    before = generation(container, "python3")

    p = container.sh("difysandboxctl deps remove python3 dsb-gone </dev/null")
    assert "(remove python3)" in p.stdout and "progress 100%" in p.stdout, p.stdout
    assert " done after " in p.stdout.splitlines()[-1], p.stdout
    after = generation(container, "python3")
    assert after > before
    listed = call(container, "ListDependencies", "s", "python3")["data"][0]
    assert not [d for d in listed if d[0] == "dsb-gone"], listed
    assert ["dsb-demo", "1.0"] in listed, listed
    gen = f"/var/lib/difysandbox/python3/packages/gen-{after}"
    assert container.sh(f"test ! -e {gen}/python/dsb_gone && grep -c dsb-gone {gen}/extra-packages.txt",
                        check=False).stdout.strip() == "0"
    out = run("import importlib.util as u; print(u.find_spec('dsb_gone') is None, u.find_spec('dsb_demo') is not None)")
    assert out["stdout"] == "True True\n", out

    # A name no install added fails as a job, and the current generation stays.
    p = container.sh("difysandboxctl deps remove python3 dsb-gone </dev/null", check=False)
    assert p.returncode == 1 and "is not installed" in p.stdout + p.stderr, p
    assert generation(container, "python3") == after
    # A version is not a name: refused before any job.
    p = call(container, "RemoveDependencies", "sas", "python3", "1", "dsb-demo==1.0", check=False)
    assert p.returncode != 0 and "without a version" in p.stderr, p


def test_pip_output_is_in_the_installer_units_journal(container, index):
    """Issue 14: docs/troubleshooting.md sends the operator to `journalctl -u 'difysandbox-deps-*'` for
    pip's output; it held only systemd's Started and Deactivated lines."""
    index.add("dsb-journal", "1.0", "dsb_journal", "VALUE = 1\n")
    job = call(container, "InstallDependencies", "sas", "python3", "1", "dsb-journal")["data"][0]
    job_id = job.rsplit("/", 1)[1]
    wait_job(container, job)
    started = container.journal("-o", "json", f"DIFYSANDBOX_JOB={job_id}")
    unit = next(json.loads(line)["UNIT_NAME"] for line in started.splitlines()
                if json.loads(line).get("UNIT_NAME", "").startswith("difysandbox-deps-python3-"))
    deadline = time.time() + 10
    while True:
        text = container.journal("-u", unit, "-o", "json")
        records = [json.loads(line) for line in text.splitlines()]
        pip = [r["MESSAGE"] for r in records if r.get("SYSLOG_IDENTIFIER") == "pip"]
        if pip or time.time() > deadline:
            break
        time.sleep(0.5)
    assert any(m.startswith("Collecting dsb-journal") for m in pip), text[-3000:]
    assert any(m.startswith("Successfully installed") and "dsb-journal-1.0" in m for m in pip), pip


def test_failed_job_log_has_no_priority_prefixes(container, index):
    """The installer's own error went to the job's Log as "<3>Installing dependencies failed: ...": its
    messages go to the journal now, and Log holds the protocol and pip's lines."""
    p = container.sh("difysandboxctl deps install python3 dsb-nowhere </dev/null", check=False)
    assert p.returncode == 1, p
    assert "No matching distribution" in p.stdout + p.stderr, p
    assert not [line for line in (p.stdout + p.stderr).splitlines() if line.lstrip().startswith("<")], p
    log = container.journal("-o", "cat", "-u", "difysandbox-deps-python3-*", "--priority=err")
    assert "Installing dependencies failed" in log, log[-2000:]


def test_job_ids_stay_unique_across_manager_restarts(container, index):
    """Issue 14: a restarted manager counted from 1 again, so DIFYSANDBOX_JOB=1 named two jobs."""
    first = call(container, "RefreshDependencies", "s", "python3")["data"][0]
    wait_job(container, first)
    container.sh("systemctl restart difysandbox-manager.service")
    second = call(container, "RefreshDependencies", "s", "python3")["data"][0]
    wait_job(container, second)
    n1, n2 = int(first.rsplit("/", 1)[1]), int(second.rsplit("/", 1)[1])
    assert n2 > n1, (first, second)
    ids = [json.loads(line)["DIFYSANDBOX_JOB"] for line in
           container.journal("-o", "json", "MESSAGE_ID=c1d8a4f2b9e34d7a8e5b60f3a2c9d417").splitlines()]
    assert len(ids) == len(set(ids)) and str(n2) in ids, ids


def npm_tarball(name, version, js):
    """An npm package tarball, as `npm pack` makes it: package/ at the top."""
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in (("package/package.json",
                            json.dumps({"name": name, "version": version, "main": "index.js"})),
                           ("package/index.js", js)):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class NpmRegistry:
    """The part of the npm registry protocol an install uses: the packument, then the tarball."""

    def __init__(self, name, version, js):
        tarball = npm_tarball(name, version, js)
        self.requests = []
        reg = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                reg.requests.append(self.path)
                base = f"http://127.0.0.1:{reg.server.server_address[1]}"
                if self.path.strip("/") == name:
                    doc = {"name": name, "dist-tags": {"latest": version},
                           "versions": {version: {"name": name, "version": version,
                                                  "dist": {"tarball": f"{base}/{name}-{version}.tgz",
                                                           "shasum": hashlib.sha1(tarball).hexdigest()}}}}
                    body, ctype = json.dumps(doc).encode(), "application/json"
                elif self.path == f"/{name}-{version}.tgz":
                    body, ctype = tarball, "application/octet-stream"
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_nodejs_install_from_the_configured_registry(container, index):
    registry = NpmRegistry("dsb-node-reg", "2.0.1", "module.exports = 'from the registry';\n")
    set_config(container, f"python_pip_mirror_url: {index.url}\nnpm_registry: {registry.url}\n")
    try:
        call(container, "ReloadConfig")
        p = container.sh("difysandboxctl deps install nodejs dsb-node-reg@^2 </dev/null")
        assert "done" in p.stdout, p.stdout
        assert "/dsb-node-reg" in registry.requests and "/dsb-node-reg-2.0.1.tgz" in registry.requests, \
            registry.requests
        out = run("console.log(require('dsb-node-reg'))", language="nodejs")
        assert out["stdout"] == "from the registry\n", out
    finally:
        registry.server.shutdown()
        set_config(container, f"python_pip_mirror_url: {index.url}\n")
        call(container, "ReloadConfig")


def test_http_refresh_route_goes_through_the_manager(container, index):
    container.sh("difysandboxctl deps install python3 dsb-demo </dev/null")
    before = generation(container, "python3")
    status, body = request("GET", "/v1/sandbox/dependencies/refresh?language=python3", timeout=300)
    assert status == 200 and json.loads(body)["code"] == 0, body
    after = generation(container, "python3")
    assert after > before
    # A refresh keeps what was installed before.
    assert run("import dsb_demo; print(dsb_demo.VALUE)")["stdout"] == "demo 1.0\n"


def test_refresh_timer_service_honours_the_interval(container, index):
    container.sh("difysandboxctl deps refresh python3 </dev/null")
    before = generation(container, "python3")
    container.sh("systemctl start difysandbox-refresh.service")
    assert generation(container, "python3") == before  # 30m is not over yet
    set_config(container, f"python_pip_mirror_url: {index.url}\npython_deps_update_interval: 1s\n")
    call(container, "ReloadConfig")
    time.sleep(1.5)
    container.sh("systemctl start difysandbox-refresh.service")
    assert generation(container, "python3") > before
    set_config(container, f"python_pip_mirror_url: {index.url}\n")
    call(container, "ReloadConfig")


def test_installer_runs_unprivileged_in_a_sandboxed_unit(container, index):
    index.slow_event.clear()
    job = call(container, "InstallDependencies", "sas", "python3", "1", "dsb-slow")["data"][0]
    try:
        deadline = time.time() + 30
        unit = ""
        while time.time() < deadline and not unit:
            out = container.sh("systemctl list-units --no-legend --plain 'difysandbox-deps-*.service'").stdout
            unit = out.split()[0] if out.strip() else ""
            time.sleep(0.1)
        assert unit, "no installer unit appeared"
        # Listed while systemd still sets it up (as root); Type=exec: active once the installer runs.
        while time.time() < deadline and \
                container.sh(f"systemctl show -p ActiveState --value {unit}").stdout.strip() != "active":
            time.sleep(0.1)
        out = container.sh(f"systemctl show {unit} -p User -p NoNewPrivileges -p ProtectSystem "
                           "-p CapabilityBoundingSet -p PrivateTmp -p ReadWritePaths").stdout
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        assert props["User"] == "difysandbox-deps", props
        assert props["NoNewPrivileges"] == "yes" and props["ProtectSystem"] == "strict", props
        assert props["PrivateTmp"] == "yes", props
        assert props["CapabilityBoundingSet"] == "", props
        assert props["ReadWritePaths"] == "/var/lib/difysandbox/python3/packages", props
        pid = container.sh(f"systemctl show -p MainPID --value {unit}").stdout.strip()
        uid = container.sh(f"awk '/^Uid:/ {{print $2}}' /proc/{pid}/status").stdout.strip()
        assert uid == container.sh("id -u difysandbox-deps").stdout.strip()
    finally:
        index.slow_event.set()
    wait_job(container, job)


# ---------------------------------------------------------------------------- the data plane alone

def test_runs_work_while_the_manager_is_stopped(container):
    container.sh("systemctl stop difysandbox-manager.service")
    try:
        assert container.sh("systemctl is-active difysandbox-manager.service", check=False).stdout.strip() \
            != "active"
        assert run("print('no manager')")["stdout"] == "no manager\n"
        assert run("console.log('no manager')", language="nodejs")["stdout"] == "no manager\n"
        # The dependency routes need it, and say so.
        status, body = request("GET", "/v1/sandbox/dependencies/refresh?language=python3", timeout=120)
        env = json.loads(body)
        # They ask the manager on the bus, which D-Bus activation starts again for the call.
        assert env["code"] == 0, env
        assert container.sh("systemctl is-active difysandbox-manager.service").stdout.strip() == "active"
    finally:
        container.sh("systemctl start difysandbox-manager.service")


# ---------------------------------------------------------------------------- reload

def test_reload_refuses_a_bad_config_and_keeps_the_old_one(container):
    set_config(container, "max_workers: 0\n")
    p = call(container, "ReloadConfig", check=False)
    assert p.returncode != 0 and "max_workers: '0': must be at least 1" in p.stderr, p
    p = container.sh("difysandboxctl reload", check=False)  # it names the error too
    assert p.returncode == 1, p
    assert "org.difysandbox.Sandbox1.Error.ConfigInvalid" in p.stderr and "max_workers" in p.stderr, p
    # One sentence (issue 14): the manager's message is the reason, difysandboxctl frames it once.
    assert p.stderr.splitlines() == [
        "difysandboxctl: the manager refused the configuration and keeps the one in force: "
        f"{CONFIG}:1: max_workers: '0': must be at least 1 (org.difysandbox.Sandbox1.Error.ConfigInvalid)"], p
    # systemctl reload reports the refusal too, and the old configuration keeps serving.
    p = container.sh("systemctl reload difysandbox-manager.service", check=False)
    assert p.returncode != 0
    assert run("print('still')")["stdout"] == "still\n"
    log = container.journal("-o", "cat", "MESSAGE_ID=9a7d2c61e35b4f0e8b1f4c2d6a9e0b37")
    assert "max_workers" in log


def test_reload_of_a_good_config_takes_effect_for_new_requests(container):
    # Dify's requests ask for network; turning it off must be seen by the very next request.
    assert run("print(1)")["stdout"] == "1\n"
    set_config(container, "enable_network: false\n")
    try:
        call(container, "ReloadConfig")
        status, body = request("POST", "/v1/sandbox/run",
                               {"language": "python3", "code": "print(1)", "preload": "",
                                "enable_network": True})
        env = json.loads(body)
        assert env["code"] == -400 and "network is disabled" in env["message"], env
        log = container.journal("-o", "cat", "MESSAGE_ID=3f1c5e0b8f4a4c51a0c9d6e2b7a81f44")
        assert "reloaded" in log
    finally:
        set_config(container, "")
        call(container, "ReloadConfig")
    assert run("print(2)")["stdout"] == "2\n"


def test_reload_applies_to_a_kept_alive_connection(container):
    """A connection opened before a reload uses the new configuration for its next request."""
    def post(sock, enable_network):
        body = json.dumps({"language": "python3", "code": "print(3)", "preload": "",
                           "enable_network": enable_network}).encode()
        sock.sendall(b"POST /v1/sandbox/run HTTP/1.1\r\nHost: x\r\nX-Api-Key: dify-sandbox\r\n"
                     b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, rest = data.split(b"\r\n\r\n", 1)
        length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0]
                     .split(b":")[1])
        while len(rest) < length:
            rest += sock.recv(65536)
        return json.loads(rest[:length])

    sock = socket.create_connection(("127.0.0.1", 8194), timeout=30)
    try:
        assert post(sock, True)["code"] == 0
        set_config(container, "enable_network: false\n")
        call(container, "ReloadConfig")
        env = post(sock, True)
        assert env["code"] == -400 and "network is disabled" in env["message"], env
    finally:
        sock.close()
        set_config(container, "")
        call(container, "ReloadConfig")


# ---------------------------------------------------------------------------- stats and journal

def post_run(code, language="python3"):
    status, body = request("POST", "/v1/sandbox/run",
                           {"language": language, "code": code, "preload": "", "enable_network": False})
    return status, json.loads(body)


def test_stats_count_the_runs_by_result(container):
    # Small limits make each result cheap to produce; one request at a time makes a second one rejected.
    set_config(container, "worker_timeout: 2\nmemory_max: 64M\nmax_requests: 1\n")
    call(container, "ReloadConfig")
    try:
        before = stats(container)
        expected = {"ok": 0, "error": 0, "timeout": 0, "memory": 0, "seccomp": 0, "rejected": 0}
        for code, result in (("print('ok')", "ok"), ("print('ok')", "ok"), ("import sys; sys.exit(3)", "error"),
                             ("import ctypes; ctypes.CDLL(None).syscall(101, 0, 0, 0, 0)", "seccomp"),
                             ("while True:\n    pass", "timeout"),
                             ("b = bytearray(b'x') * (256 << 20)", "memory")):
            status, env = post_run(code)
            assert status == 200 and env["code"] == 0, env
            expected[result] += 1
        assert post_run("console.log(1)", language="nodejs")[1]["code"] == 0
        expected["ok"] += 1
        t = threading.Thread(target=post_run, args=("import time; time.sleep(1.2)",))
        t.start()
        time.sleep(0.5)
        status, env = post_run("print('too many')")
        t.join(30)
        assert status == 503 and env["code"] == -503, env
        expected["ok"] += 1      # the sleeper
        expected["rejected"] += 1
        after = stats(container)
    finally:
        set_config(container, "")
        call(container, "ReloadConfig")
    delta = {k: after["RunsByResult"][k] - before["RunsByResult"][k] for k in expected}
    assert delta == expected, (delta, expected)
    py_ok = after["RunsByLanguage"]["python3"]["ok"] - before["RunsByLanguage"]["python3"]["ok"]
    assert py_ok == 3
    assert after["RunsByLanguage"]["nodejs"]["ok"] - before["RunsByLanguage"]["nodejs"]["ok"] == 1
    samples, p50, p95, p99 = after["Latency"]["python3"]
    assert samples == before["Latency"]["python3"][0] + 7 and 0 < p50 <= p95 <= p99
    assert p99 >= 1_800_000  # the timeout run took its two seconds
    # Free but for the runner's warm pool: its prepared runs (pool_size: 2 + 1) hold a UID each.
    assert after["UidPoolSize"] == 1000 and 1000 - 3 <= after["UidPoolFree"] <= 1000, after
    assert after["ActiveRuns"] == 0
    assert after["UptimeUSec"] > 0 and after["StatsSinceUSec"] > 0
    # Stats live with the workers, not the manager: a restart keeps them.
    container.sh("systemctl restart difysandbox-manager.service")
    again = stats(container)
    assert again["RunsByResult"]["ok"] == after["RunsByResult"]["ok"]


RUN_FINISHED = "MESSAGE_ID=6b4c976ba6474881ab52fe04f0940326"


def run_records(container):
    text = container.journal("-o", "json", RUN_FINISHED)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_stats_count_pool_hits_and_misses(container):
    """Each run counts as a hit of the warm pool or a miss, as its journal record's WARM says, through
    GetStats and difysandboxctl. A run of the pool's kind (enable_network, as Dify sends it) on a pool that
    has had time to fill is a hit; one without network never is (the pool holds the configured kind)."""
    before, seen = stats(container), len(run_records(container))
    runs = 0
    for attempt in range(20):  # the pool refills while runs pause: one of these finds it ready
        time.sleep(1)
        run("print(1)")
        runs += 1
        if any(r["WARM"] == "1" for r in run_records(container)[seen:]):
            break
    assert post_run("print(2)")[1]["code"] == 0
    assert post_run("console.log(3)", language="nodejs")[1]["code"] == 0
    runs += 2
    after = stats(container)
    deadline = time.time() + 10  # a record is written before the reply; journald may store it later
    while len(run_records(container)) < seen + runs and time.time() < deadline:
        time.sleep(0.2)
    records = run_records(container)[seen:]
    assert len(records) == runs, records
    expected = {lang: {"hits": sum(r["LANGUAGE"] == lang and r["WARM"] == "1" for r in records),
                       "misses": sum(r["LANGUAGE"] == lang and r["WARM"] == "0" for r in records)}
                for lang in ("python3", "nodejs")}
    assert expected["python3"]["hits"] >= 1 and expected["python3"]["misses"] >= 1, records
    assert expected["nodejs"]["misses"] >= 1, records
    delta = {lang: {k: after["PoolByLanguage"][lang][k] - before["PoolByLanguage"][lang][k]
                    for k in ("hits", "misses")} for lang in expected}
    assert delta == expected, (delta, expected)

    pool = json.loads(container.sh("difysandboxctl --json status").stdout)["pool_by_language"]
    assert pool == after["PoolByLanguage"], (pool, after)
    line = next(x for x in container.sh("difysandboxctl status").stdout.splitlines()
                if x.startswith("Warm pool:"))
    hits, misses = pool["python3"]["hits"], pool["python3"]["misses"]
    assert f"python3 {hits} hits, {misses} misses ({hits * 100 // (hits + misses)}%)" in line, line


def test_manager_notifies_systemd(container):
    props = container.sh("systemctl show difysandbox-manager.service -p StatusText -p WatchdogUSec "
                         "-p NotifyAccess -p Type").stdout
    assert "StatusText=Serving" in props and "Type=dbus" in props, props
    assert "WatchdogUSec=30s" in props and "NotifyAccess=main" in props, props
    # A reload goes through RELOADING=1 and back to READY=1: systemd reports it as a reload that ended.
    container.sh("systemctl reload difysandbox-manager.service")
    assert "StatusText=Serving" in container.sh("systemctl show difysandbox-manager.service -p StatusText").stdout


def test_active_runs_and_free_uids_during_a_run(container):
    size = stats(container)["UidPoolSize"]
    t = threading.Thread(target=lambda: run("import time; time.sleep(3)"))
    t.start()
    try:
        deadline = time.time() + 10
        seen = None
        while time.time() < deadline:
            s = stats(container)
            if s["ActiveRuns"] >= 1:
                seen = s
                break
            time.sleep(0.1)
        assert seen, "ActiveRuns never became 1"
        assert seen["UidPoolFree"] <= size - 1
        prop = busctl(container, "get-property", BUS, PATH, IFACE, "ActiveRuns")
        assert prop["data"] >= 1, prop  # the run sleeps 3 s: still active right after
    finally:
        t.join(30)


def test_journal_run_records_by_message_id_with_all_fields(container):
    out = run("print('journal')")
    assert out["stdout"] == "journal\n"
    time.sleep(0.5)
    text = container.journal("-o", "json", "MESSAGE_ID=6b4c976ba6474881ab52fe04f0940326", "-n", "1")
    rec = json.loads(text.strip().splitlines()[-1])
    for field in ("DIFYSANDBOX_RUN_ID", "LANGUAGE", "EXIT_CODE", "RESULT", "DURATION_USEC", "CPU_USEC",
                  "MEMORY_PEAK", "UID"):
        assert field in rec, (field, rec)
    # The catalog explains it.
    explained = container.journal("-x", "-o", "short", "MESSAGE_ID=6b4c976ba6474881ab52fe04f0940326", "-n", "1")
    assert "difysandbox run" in explained and "finished" in explained, explained


def test_refused_calls_are_named_in_answer_journal_and_stats(container):
    """Issue 38: a call outside the policy fails in the snippet, and the answer, the run's journal record
    and GetStats name it; `difysandboxctl status` shows what users' code needs."""
    before = stats(container).get("RefusedCalls", {}).get("python3", {}).get("getcpu", 0)
    code = "import ctypes, sys\nfor _ in range(2): ctypes.CDLL(None).syscall(309, 0, 0, 0)\nsys.exit(2)\n"
    status, env = post_run(code)
    assert status == 200 and env["code"] == 0, env
    error = env["data"]["error"]
    assert error.startswith("process exited with code 2\nerror: system call getcpu is not allowed in this "
                            "sandbox and failed with ENOSYS"), error
    time.sleep(0.5)
    recs = [r for r in run_records(container) if r.get("SYSCALL") == "getcpu"]
    assert recs, "no run record with SYSCALL=getcpu"
    assert recs[-1]["REFUSED_SYSCALLS"] == "getcpu:2" and recs[-1]["REFUSED_SYSCALL_COUNT"] == "2", recs[-1]
    assert stats(container)["RefusedCalls"]["python3"]["getcpu"] == before + 2
    out = container.sh("difysandboxctl status").stdout
    assert re.search(r"^Refused calls:  .*python3 getcpu \d+", out, re.M), out


# ---------------------------------------------------------------------------- permissions

def test_reads_are_open_and_changes_are_root_only(container):
    s = call(container, "GetStats", user=NOBODY)
    assert "RunsByResult" in s["data"][0]
    call(container, "ListDependencies", "s", "python3", user=NOBODY)
    call(container, "ListDependenciesEx", "s", "python3", user=NOBODY)
    call(container, "ListJobs", user=NOBODY)
    busctl(container, "get-property", BUS, PATH, IFACE, "Version", user=NOBODY)
    for method, sig, args in (("ReloadConfig", "", ()), ("RefreshDependencies", "s", ("python3",)),
                              ("InstallDependencies", "sas", ("python3", "1", "dsb-demo")),
                              ("RemoveDependencies", "sas", ("python3", "1", "dsb-demo"))):
        p = call(container, method, sig, *args, user=NOBODY, check=False)
        assert p.returncode != 0 and "Access denied" in p.stderr, (method, p)
    p = container.sh(f"{NOBODY} difysandboxctl reload", check=False)
    assert p.returncode != 0 and "needs root" in p.stderr, p
    p = container.sh(f"{NOBODY} difysandboxctl stats")
    assert "ok" in p.stdout


def test_ctl_status_and_json(container):
    p = container.sh("difysandboxctl status")
    assert "Version:" in p.stdout and "UID pool:" in p.stdout and "of 1000 free" in p.stdout, p.stdout
    data = json.loads(container.sh("difysandboxctl --json stats").stdout)
    assert data["runs_by_result"]["ok"] >= 1 and "python3" in data["dependency_generations"], data


def test_refused_request_record_carries_its_code(container):
    """Issue 14: a 401 has no envelope, and its journal record said CODE=0, as a success's would."""
    status, _ = request("POST", "/v1/sandbox/run", {"language": "python3", "code": "print(1)"}, key="wrong")
    assert status == 401
    deadline = time.time() + 10
    while True:
        text = container.journal("-o", "json", "MESSAGE_ID=afb7818a1c774a8ab23a8cdfef9b6260", "STATUS=401")
        records = [json.loads(line) for line in text.splitlines()]
        if records or time.time() > deadline:
            break
        time.sleep(0.3)
    assert records, "no request record with STATUS=401"
    assert {r["CODE"] for r in records} == {"-401"}, [(r["STATUS"], r["CODE"]) for r in records]


def test_invalid_arguments_are_refused_with_the_reason(container):
    p = call(container, "InstallDependencies", "sas", "python3", "1", "--index-url=http://evil/", check=False)
    assert p.returncode != 0 and "--index-url" in p.stderr, p
    p = container.sh("difysandboxctl deps install python3 -- --index-url=http://evil/", check=False)
    assert p.returncode in (1, 2), p
    p = call(container, "InstallDependencies", "sas", "cobol", "1", "x", check=False)
    assert p.returncode != 0 and "cobol" in p.stderr + p.stdout, p
