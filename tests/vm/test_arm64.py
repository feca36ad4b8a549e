"""What an arm64 host adds to the real-kernel tier (DIFYSANDBOX_VM_ARCH=arm64, tests/vm/run-arm64): the
packaged service of an arm64 .deb on an emulated arm64 Debian with its own kernel answers both languages
(pandas included) through the socket, and the escape cases that apply to arm64 hold there.

The escape cases that apply: every case of tests/escape that names no system call by number and runs no
machine code. Those that do (raw `syscall(N)` with x86-64's numbers, x86 instructions, the i386 and x32
ABIs) mean another call, or nothing, on arm64; their attacks reach the arm64 filter through the cases
kept here (execve, fork, clone, namespaces, set*id... through the interpreters' own calls), and the
compat ABI is decided by test_compat_abi_is_unreachable. Cases whose options have no HTTP counterpart
(--timeout, --memory) are left to the integration suite, as in tests/system/test_package_deb.py.

Only an arm64 guest's tier collects this file (tests/vm/conftest.py: collect_ignore)."""

import json
import os
import re
import zlib

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ESCAPE = os.path.join(TOP, "tests", "escape")
MARKER = "DIFYSANDBOX-" + "ESCAPED"
CALLING = re.compile(r"^\s*(print\('calling'|console\.log\('calling'\))", re.M)
# What makes a case x86-64's: a raw call by number, or machine code in an executable page.
X86_ONLY = re.compile(r"libc\.syscall|machine_code|PROT_EXEC")


def header_of(code):
    header = {}
    for line in code.splitlines():
        if not line.startswith(("#", "//")):
            break
        m = re.match(r"^(?:#|//)\s*([a-z-]+):\s*(.*)$", line)
        if m:
            header[m.group(1)] = m.group(2).strip()
    return header


def arm64_cases():
    cases = []
    for folder, ext in (("python", ".py"), ("nodejs", ".js")):
        for name in sorted(os.listdir(os.path.join(ESCAPE, folder))):
            if not name.endswith(ext):
                continue
            with open(os.path.join(ESCAPE, folder, name)) as f:
                code = f.read()
            if X86_ONLY.search(code):
                continue
            if set(header_of(code).get("options", "").split()) - {"--network"}:
                continue
            cases.append(f"{folder}/{name}")
    return cases


def classify(data):
    """The `result` of `difysandbox run`, from what the API says (DESIGN §1)."""
    error = data["error"]
    if "error: operation not permitted" in error:
        return "seccomp"
    if "error: timeout" in error:
        return "timeout"
    if "error: memory limit exceeded" in error:
        return "memory"
    if "error: output limit exceeded" in error:
        return "output-truncated"
    return "ok" if data["exit_code"] == 0 else "error"


def test_guest_is_an_arm64_debian_with_the_arm64_package(guest, suite):
    assert guest.sh("uname -m").stdout.strip() == "aarch64"
    assert guest.sh("dpkg --print-architecture").stdout.strip() == "arm64"
    assert guest.sh("dpkg-query -W -f='${Architecture}' difysandbox").stdout.strip() == "arm64"
    assert guest.sh(". /etc/os-release && echo $VERSION_CODENAME").stdout.strip() == suite
    # Debian's own arm64 kernel, booted by QEMU
    assert "Debian" in guest.sh("uname -v").stdout, guest.sh("uname -a").stdout


PYTHON = r"""
import asyncio, hashlib, json, sqlite3, threading, zlib
import numpy as np, pandas as pd
import requests, httpx, jinja2
df = pd.DataFrame({"a": np.arange(6), "b": list("xyxyxy")})
out = {"pandas": int(df.groupby("b")["a"].sum()["y"]), "numpy": round(float(np.linalg.det(np.eye(3) * 2)), 6)}
db = sqlite3.connect(":memory:"); db.execute("create table t(v)"); db.execute("insert into t values (7)")
out["sqlite3"] = db.execute("select v * 6 from t").fetchone()[0]
box = []
t = threading.Thread(target=lambda: box.append(zlib.crc32(b"arm64"))); t.start(); t.join()
out["thread"] = box[0]
async def main():
    await asyncio.sleep(0.01)
    return hashlib.sha256(b"x").hexdigest()[:8]
out["asyncio"] = asyncio.run(main())
out["jinja2"] = jinja2.Template("{{ n * 7 }}").render(n=6)
print(json.dumps(out, sort_keys=True))
"""
PYTHON_EXPECTED = {"pandas": 9, "numpy": 8.0, "sqlite3": 42, "thread": zlib.crc32(b"arm64"), "asyncio": "2d711642",
                   "jinja2": "42"}

NODEJS = r"""
const crypto = require('crypto'), zlib = require('zlib');
const { Worker } = require('worker_threads');
const wasm = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,
                             10,9,1,7,0,32,0,32,1,106,11]);
const add = new WebAssembly.Instance(new WebAssembly.Module(wasm)).exports.add;
const out = {
  intl: new Intl.NumberFormat('de-DE').format(1234567.5),
  crypto: crypto.createHash('sha256').update('x').digest('hex').slice(0, 8),
  zlib: zlib.inflateSync(zlib.deflateSync(Buffer.from('arm64'))).toString(),
  wasm: add(40, 2),
};
const w = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
w.on('message', (m) => { out.worker = m; console.log(JSON.stringify(out)); });
"""
NODEJS_EXPECTED = {"intl": "1.234.567,5", "crypto": "2d711642", "zlib": "arm64", "wasm": 42, "worker": 42}


def test_both_languages_through_the_socket_pandas_included(guest):
    data = guest.run(PYTHON, network=False)
    assert data["error"] == "", data
    assert json.loads(data["stdout"]) == PYTHON_EXPECTED, data
    data = guest.run(NODEJS, language="nodejs", network=False)
    assert data["error"] == "", data
    assert json.loads(data["stdout"]) == NODEJS_EXPECTED, data


@pytest.mark.parametrize("case", arm64_cases())
def test_escape_case_holds_on_arm64(guest, case):
    with open(os.path.join(ESCAPE, case)) as f:
        code = f.read()
    header = header_of(code)
    expect = set(header["expect-result"].split("|"))
    language = "nodejs" if case.endswith(".js") else "python3"
    data = guest.run(code, language=language, network="--network" in header.get("options", "").split())
    text = data["stdout"] + data["stderr"] + data["error"]
    assert MARKER not in text, f"{case} ESCAPED on arm64 ({header['attack']}): {data}"
    result = classify(data)
    if "refused" in expect and result in ("ok", "error"):
        # The API carries no refused_calls (the integration tier checks each case's naming); the run went
        # on after the refusal, and the marker rule above proves it was blocked.
        result = "refused"
    assert "any" in expect or result in expect, f"{case}: result {result}, expected {sorted(expect)}: {data}"
    if result == "seccomp" and CALLING.search(code):
        assert data["stdout"].rstrip("\n").rpartition("\n")[2] == "calling", \
            f"{case}: killed before its attack was tried: {data}"


def test_compat_abi_is_unreachable(guest):
    """x86-64's other ABIs (i386 through int $0x80, x32) are a call away from 64-bit code, so the corpus
    attacks them and the filter kills them. arm64's only other one is AArch32 (CONFIG_COMPAT), and a task
    enters it only through execve() of a 32-bit ELF file: the final stage refuses execve (EPERM, named in
    the answer), and the arch check of the filter (libseccomp: any architecture but the native one is
    killed) stands behind it. So the decision on arm64: no compat case, and execve's refusal is what is
    asserted here, on a kernel that has the compat ABI or says it has none."""
    config = guest.sh("grep -E '^CONFIG_COMPAT=' /boot/config-$(uname -r) || echo CONFIG_COMPAT=n").stdout
    assert config.strip() in ("CONFIG_COMPAT=y", "CONFIG_COMPAT=n"), config
    code = ("import os\nprint('calling', flush=True)\n"
            "os.execv('/usr/bin/python3', ['python3', '-c', 'print(\"DIFYSANDBOX-\" + \"ESCAPED\")'])\n")
    data = guest.run(code, network=False)
    assert MARKER not in data["stdout"] + data["stderr"], data
    assert data["stdout"].strip().splitlines()[-1] == "calling", data
    assert data["error"].endswith("PermissionError: [Errno 1] Operation not permitted\n"), data
