"""The Node.js library corpus (tests/corpus/nodejs/*.js with `// corpus: npm ...` headers) through the product's
own path: the npm packages the snippets name are installed by the manager's real npm install
(`difysandboxctl deps install nodejs NAME@VERSION...`, the installer's sandboxed unit, npm), and each snippet
runs through the socket-activated service, as Dify sends it (enable_network=true). A snippet asserts its own
output and prints `CORPUS-OK <name>` last; the run must be ok with exit code 0.

npm reaches npm's registry through a mirror of this test's own on 127.0.0.1, configured as an operator
would (`npm_registry`): it forwards each request to https://registry.npmjs.org with the host's CA bundle and
points the tarball URLs at itself. The installer runs npm with `--prefix` set to the new generation, which
also moves npm's global config file ({prefix}/etc/npmrc), so a `cafile` or proxy that the host's
/usr/etc/npmrc names is not read; a host whose way to the registry needs one (this one, CI's) then fails with
SELF_SIGNED_CERT_IN_CHAIN. The mirror keeps the test about the product, not about that host's way out.

axios_egress.js goes through the run's egress relay to an HTTP server of this test. Loopback and this host's
own addresses are refused by the relay by design (docs/security.md), so, as tests/integration/test_egress.py
does, the server lives in a network namespace of the test's own behind a veth pair, on 198.51.100.2
(TEST-NET-2); the namespace and the link are removed whatever happens.

The built-in snippets (builtin_*.js: Intl, zlib, crypto, worker_threads, fs.watch, os, process) run here too,
and also in tests/integration/test_corpus.py.
"""

import http.server
import re
import shlex
import ssl
import subprocess
import sys
import textwrap
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import TOP, run

CORPUS = Path(TOP) / "tests" / "corpus" / "nodejs"
HEADER = re.compile(r"^//\s*corpus:\s*(\S+)\s*(.*)$")
HOST_ADDRESS, INET_ADDRESS, PORT = "198.51.100.1", "198.51.100.2", 8080
URL_PLACEHOLDER = "__CORPUS_HTTP_URL__"

SERVER = textwrap.dedent("""
    import http.server, json, sys
    class H(http.server.BaseHTTPRequestHandler):
        def answer(self, body=None):
            if self.path.startswith('/missing'):
                self.send_response(404); self.send_header('Content-Length', '0'); self.end_headers(); return
            d = {'path': self.path, 'method': self.command}
            if body is not None:
                d['body'] = body
            b = json.dumps(d).encode()
            self.send_response(200); self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
        def do_GET(self): self.answer()
        def do_POST(self): self.answer(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
        def log_message(self, *a): pass
    http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
""")


def snippets():
    out = []
    for path in sorted(CORPUS.glob("*.js")):
        npm = []
        for line in path.read_text().splitlines():
            if not line.startswith("//"):
                break
            m = HEADER.match(line)
            if m and m.group(1) == "npm":
                npm += m.group(2).split()
        out.append((path.stem, path, npm))
    return out


def ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def internet():
    """An HTTP server on 198.51.100.2:8080 in a network namespace of its own, reached over a veth."""
    suffix = uuid.uuid4().hex[:6]
    netns, host_link, ns_link = f"dsbt-corp-{suffix}", f"dsbc{suffix}h", f"dsbc{suffix}n"
    server = None
    try:
        ip("netns", "add", netns)
        ip("link", "add", host_link, "type", "veth", "peer", "name", ns_link)
        ip("link", "set", ns_link, "netns", netns)
        ip("addr", "add", f"{HOST_ADDRESS}/24", "dev", host_link)
        ip("link", "set", host_link, "up")
        ip("-n", netns, "addr", "add", f"{INET_ADDRESS}/24", "dev", ns_link)
        ip("-n", netns, "link", "set", ns_link, "up")
        ip("-n", netns, "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", SERVER, INET_ADDRESS,
                                   str(PORT)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        probe = f"import urllib.request as u, time\nfor _ in range(100):\n    try:\n        " \
                f"u.urlopen('http://{INET_ADDRESS}:{PORT}/items', timeout=1); break\n    except OSError:\n" \
                f"        time.sleep(0.1)\nelse:\n    raise SystemExit('the test server never answered')\n"
        subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", probe], check=True, timeout=30)
        yield f"http://{INET_ADDRESS}:{PORT}"
    finally:
        if server:
            server.kill()
            server.wait()
        ip("link", "del", host_link, check=False)
        ip("netns", "del", netns, check=False)


UPSTREAM = "https://registry.npmjs.org"


class RegistryMirror:
    """npm's registry, forwarded: packuments (their tarball URLs rewritten to here) and tarballs."""

    def __init__(self):
        context = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")
        cache, lock = {}, threading.Lock()
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                key = (self.path, self.headers.get("Accept", ""))
                with lock:
                    hit = cache.get(key)
                if hit is None:
                    req = urllib.request.Request(UPSTREAM + self.path, headers={"Accept": key[1] or "*/*"})
                    try:
                        with urllib.request.urlopen(req, context=context, timeout=60) as r:
                            hit = (r.status, r.headers.get("Content-Type", "application/octet-stream"), r.read())
                    except urllib.error.HTTPError as e:
                        hit = (e.code, "text/plain", e.read())
                    if "json" in hit[1]:
                        hit = (hit[0], hit[1], hit[2].replace(UPSTREAM.encode() + b"/", mirror.url.encode()))
                    with lock:
                        cache[key] = hit
                self.send_response(hit[0])
                self.send_header("Content-Type", hit[1])
                self.send_header("Content-Length", str(len(hit[2])))
                self.end_headers()
                self.wfile.write(hit[2])

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def npm_corpus(container):
    """Every npm package the snippets name, installed by the manager into a new nodejs generation."""
    packages = sorted({p for _, _, npm in snippets() for p in npm})
    assert len(packages) >= 20, packages
    mirror = RegistryMirror()
    container.sh("mkdir -p /etc/difysandbox && printf 'npm_registry: %s\\n' "
                 f"{shlex.quote(mirror.url)} > /etc/difysandbox/config.yaml && difysandboxctl reload")
    p = container.sh("difysandboxctl deps install nodejs " + " ".join(shlex.quote(x) for x in packages)
                     + " </dev/null", check=False, timeout=600)
    assert p.returncode == 0 and "done" in p.stdout, \
        f"difysandboxctl deps install nodejs failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    listed = container.sh("difysandboxctl deps list nodejs").stdout
    try:
        for spec in packages:
            name = spec.rsplit("@", 1)[0]
            assert re.search(rf"^{re.escape(name)}\s", listed, re.M), f"{name} is not listed:\n{listed}"
        yield packages
    finally:
        # The container is the whole tier's: leave its Node.js requirements as they were, while the
        # mirror still answers (a later install reinstalls every requirement from the registry in force).
        names = [spec.rsplit("@", 1)[0] for spec in packages]
        container.sh("difysandboxctl deps remove nodejs " + " ".join(shlex.quote(n) for n in names)
                     + " </dev/null", check=False, timeout=600)
        container.sh(": > /etc/difysandbox/config.yaml && difysandboxctl reload")
        mirror.server.shutdown()


@pytest.mark.parametrize("name,path,npm", snippets(), ids=[s[0] for s in snippets()])
def test_nodejs_corpus(npm_corpus, internet, name, path, npm):
    code = path.read_text().replace(URL_PLACEHOLDER, internet)
    out = run(code, language="nodejs", timeout=120)
    assert out["exit_code"] == 0 and out["error"] == "", f"{name}: {out}"
    assert out["stdout"].splitlines()[-1:] == [f"CORPUS-OK {name}"], f"{name}: {out}"
