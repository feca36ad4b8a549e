"""Language sanity: what Dify's code nodes really run must work inside the sandbox, with the right output
and the result/error contract of DESIGN.md §1."""

import base64
import hashlib
import json
import uuid

import pytest

from conftest import contract_problems, run_snippet


def ok(res):
    """Asserts a clean run and returns its stdout."""
    problems = contract_problems(res)
    assert res['result'] == 'ok' and res['exit_code'] == 0 and res['error'] == '' and not problems, \
        '\n'.join(problems) + res.show()
    return res['stdout']


def contract(res):
    problems = contract_problems(res)
    assert not problems, '\n'.join(problems) + res.show()


# ----------------------------------------------------------------------------------------- Python

def test_python_hello(run):
    res = run('print("hello", 1 + 1)')
    assert ok(res) == 'hello 2\n', res.show()
    assert res['stderr'] == '', res.show()
    assert 10000 <= res['uid'] <= 10999, res.show()


def test_python_uid_is_the_reported_uid(run):
    res = run('import os\nprint(os.getuid(), os.getgid())')
    assert ok(res) == f'{res["uid"]} {res["uid"]}\n', res.show()


def test_python_name_main(run):
    res = run('if __name__ == "__main__":\n    print("main")\n')
    assert ok(res) == 'main\n', res.show()


def test_python_stdlib_mix(run):
    code = r'''
import json, re, datetime, decimal, hashlib, uuid, random, base64
from zoneinfo import ZoneInfo
out = {}
out['json'] = json.loads(json.dumps({'a': [1, 2, {'b': None}]}))
out['re'] = re.findall(r'(\w+)@(\w+)\.com', 'x a@b.com y c@d.com')
utc = datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
out['tokyo'] = utc.astimezone(ZoneInfo('Asia/Tokyo')).isoformat()
out['tokyo_name'] = utc.astimezone(ZoneInfo('Asia/Tokyo')).tzname()
out['ny_summer'] = datetime.datetime(2024, 7, 1, 12, tzinfo=ZoneInfo('America/New_York')).utcoffset().total_seconds()
out['delta'] = str(datetime.date(2024, 3, 1) - datetime.date(2024, 2, 1))
decimal.getcontext().prec = 30
out['decimal'] = str(decimal.Decimal(1) / decimal.Decimal(7))
out['sha256'] = hashlib.sha256(b'dify').hexdigest()
out['md5'] = hashlib.md5(b'dify').hexdigest()
out['uuid5'] = str(uuid.uuid5(uuid.NAMESPACE_DNS, 'dify.ai'))
out['uuid4_version'] = uuid.uuid4().version
rng = random.Random(42)
out['random'] = [rng.randint(0, 1000) for _ in range(5)]
out['b64'] = base64.b64encode('données'.encode()).decode()
print(json.dumps(out, sort_keys=True))
'''
    res = run(code)
    got = json.loads(ok(res))
    import random
    rng = random.Random(42)
    assert got == {
        'json': {'a': [1, 2, {'b': None}]},
        're': [['a', 'b'], ['c', 'd']],
        'tokyo': '2024-01-01T09:00:00+09:00',
        'tokyo_name': 'JST',
        'ny_summer': -4 * 3600.0,
        'delta': '29 days, 0:00:00',
        'decimal': '0.142857142857142857142857142857',
        'sha256': hashlib.sha256(b'dify').hexdigest(),
        'md5': hashlib.md5(b'dify').hexdigest(),
        'uuid5': str(uuid.uuid5(uuid.NAMESPACE_DNS, 'dify.ai')),
        'uuid4_version': 4,
        'random': [rng.randint(0, 1000) for _ in range(5)],
        'b64': base64.b64encode('données'.encode()).decode(),
    }, res.show()


def test_python_http_and_template_packages(run):
    code = '''
import requests, httpx, jinja2, socks
t = jinja2.Environment(autoescape=True).from_string(
    "Hello, {{ name }}! {% for i in items %}[{{ i }}]{% endfor %} {{ html }}")
print(t.render(name="Dify", items=[1, 2, 3], html="<b>"))
print(requests.__name__, httpx.__name__, socks.PROXY_TYPE_SOCKS5)
s = requests.Session()
print(type(s).__name__)
'''
    res = run(code)
    assert ok(res) == 'Hello, Dify! [1][2][3] &lt;b&gt;\nrequests httpx 2\nSession\n', res.show()


def test_python_numpy_pandas(run):
    # Upstream users hit "operation not permitted" importing these (pandas runs `uname -p` at import,
    # OpenBLAS starts threads): both must import and compute.
    code = '''
import numpy as np
import pandas as pd
a = np.arange(10).reshape(2, 5)
print(a.sum(axis=1).tolist(), round(float(np.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]]))), 6))
m = np.random.default_rng(0).random((200, 200))
print(np.allclose(m @ np.linalg.inv(m), np.eye(200), atol=1e-6))
df = pd.DataFrame({"team": ["a", "b", "a", "b", "c"], "score": [1, 2, 3, 4, 5]})
g = df.groupby("team")["score"].agg(["sum", "mean"])
print(g["sum"].to_dict(), g["mean"].to_dict())
print(df.to_csv(index=False).strip().replace("\\n", "|"))
'''
    res = run(code)
    assert ok(res) == ("[10, 35] -2.0\nTrue\n{'a': 4, 'b': 6, 'c': 5} {'a': 2.0, 'b': 3.0, 'c': 5.0}\n"
                       "team,score|a,1|b,2|a,3|b,4|c,5\n"), res.show()


def test_python_threads(run):
    code = '''
import threading
from concurrent.futures import ThreadPoolExecutor
total = []
lock = threading.Lock()
def work(n):
    with lock:
        total.append(n * n)
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
with ThreadPoolExecutor(max_workers=8) as ex:
    squares = list(ex.map(lambda x: x * x, range(20)))
print(sum(total), sum(squares))
'''
    res = run(code)
    assert ok(res) == f'{sum(i * i for i in range(8))} {sum(i * i for i in range(20))}\n', res.show()


def test_python_asyncio(run):
    code = '''
import asyncio, time
async def later(n):
    await asyncio.sleep(0.05)
    return n * 2
def blocking(n):
    time.sleep(0.05)
    return n + 100
async def main():
    a = await asyncio.gather(*(later(i) for i in range(5)))
    b = await asyncio.gather(*(asyncio.to_thread(blocking, i) for i in range(3)))
    q = asyncio.Queue()
    await q.put("x")
    return a, b, await q.get()
print(asyncio.run(main()))
'''
    res = run(code)
    assert ok(res) == "([0, 2, 4, 6, 8], [100, 101, 102], 'x')\n", res.show()


def test_python_unicode(run):
    code = 'import sys\ns = "héllo 世界 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 مرحبا"\nprint(s, len(s))\nprint("エラー 🚫", file=sys.stderr)\n'
    res = run(code)
    s = 'héllo 世界 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 مرحبا'
    assert ok(res) == f'{s} {len(s)}\n', res.show()
    assert res['stderr'] == 'エラー 🚫\n', res.show()


def test_python_large_output_preserved(run):
    size = 2 * 1024 * 1024
    code = f'''
import sys
pattern = "".join(chr(48 + i % 75) for i in range(1000))
data = (pattern * ({size} // 1000 + 1))[:{size}]
sys.stdout.write(data)
'''
    res = run(code)
    pattern = ''.join(chr(48 + i % 75) for i in range(1000))
    expected = (pattern * (size // 1000 + 1))[:size]
    out = ok(res)
    assert len(out) == size and out == expected, f'got {len(out)} characters' + res.show()


def test_python_binary_output_stays_valid_json(run):
    # NUL bytes and bytes that are not UTF-8: the JSON must still be one valid UTF-8 object, NUL kept.
    res = run('import sys\nsys.stdout.buffer.write(b"a\\x00b\\xff\\xfec\\n")\nsys.stdout.flush()\n'
              'sys.stderr.buffer.write(b"\\xc3(\\n")\nprint("after")')
    out = ok(res)
    assert out.startswith('a\x00b') and out.endswith('c\nafter\n') and '\ufffd' in out, res.show()
    assert res['stderr'].endswith('(\n') and '\ufffd' in res['stderr'], res.show()


def test_python_exit_code(run):
    res = run('import sys\nprint("before")\nsys.exit(3)')
    contract(res)
    assert res['exit_code'] == 3 and res['result'] == 'error', res.show()
    assert res['error'].startswith('process exited with code 3'), res.show()
    assert res['stdout'] == 'before\n', res.show()


# A module whose objects only the interpreter's teardown would finalize: Python does not promise that
# teardown, and a run whose code returns normally skips it (src/runtime/python3.c, the fast exit).
EXIT_ORDER = (
    'import atexit, sys, threading, time, types\n'
    'class Noisy:\n'
    '    def __init__(self, name): self.name = name\n'
    '    def __del__(self): print(self.name, flush=True)\n'
    'module = types.ModuleType("kept_by_sys_modules")\n'
    'module.obj = Noisy("module teardown")\n'
    'sys.modules[module.__name__] = module\n'
    'keep = Noisy("finalizer")\n'
    'atexit.register(lambda: print("atexit", flush=True))\n'
    'threading.Thread(target=lambda: (time.sleep(0.2), print("thread", flush=True))).start()\n'
    'print("code")\n'
)


def test_python_exit_keeps_a_scripts_order_without_the_teardown(run):
    """Every run, not only a preloaded one of the pool: what a script expects of its exit happens, in order
    (threads joined, atexit handlers, its own objects' finalizers), and the interpreter's module teardown,
    4 ms of a bare run, does not. An exit the code asks for is the interpreter's own, teardown and all."""
    res = run(EXIT_ORDER)
    assert ok(res).splitlines() == ['code', 'thread', 'atexit', 'finalizer'], res.show()
    res = run(EXIT_ORDER + 'sys.exit(3)\n')
    contract(res)
    assert res['exit_code'] == 3, res.show()
    lines = res['stdout'].splitlines()
    assert lines[:3] == ['code', 'thread', 'atexit'] and 'module teardown' in lines[3:], res.show()


def test_python_traceback(run):
    res = run('d = {}\nprint("start")\nd["missing"]\n')
    contract(res)
    assert res['exit_code'] == 1 and res['result'] == 'error', res.show()
    assert 'Traceback (most recent call last)' in res['stderr'] and "KeyError: 'missing'" in res['stderr'], res.show()
    assert res['error'].startswith('process exited with code 1\n'), res.show()
    assert "KeyError: 'missing'" in res['error'], res.show()


def test_python_stderr_is_not_an_error(run):
    res = run('import sys\nprint("warn", file=sys.stderr)\nprint("fine")')
    assert ok(res) == 'fine\n', res.show()
    assert res['stderr'] == 'warn\n' and res['error'] == '', res.show()


def test_python_tempfile_and_dev_null(run):
    code = '''
import tempfile, os, json
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("temp data")
    f.flush()
    f.seek(0)
    print(f.name.startswith("/tmp/"), f.read())
d = tempfile.mkdtemp()
with open(os.path.join(d, "x.json"), "w") as f:
    json.dump({"k": 1}, f)
print(sorted(os.listdir(d)), json.load(open(os.path.join(d, "x.json"))))
with open("/dev/null", "w") as n:
    n.write("discarded")
print(len(open("/dev/zero", "rb").read(16)), len(open("/dev/urandom", "rb").read(16)))
'''
    res = run(code)
    assert ok(res) == "True temp data\n['x.json'] {'k': 1}\n16 16\n", res.show()


# Everyday standard-library calls that must not kill the run (each one needs a syscall the policy may lack).
PYTHON_COMMON_CALLS = {
    'sqlite3_file_db': ('''
import sqlite3
db = sqlite3.connect("/tmp/x.db")
db.execute("create table t (v)")
db.execute("insert into t values (42)")
db.commit()
print(db.execute("select v from t").fetchone()[0])
''', '42\n'),
    'os_pwrite': ('''
import os
fd = os.open("/tmp/f", os.O_RDWR | os.O_CREAT, 0o600)
os.pwrite(fd, b"abc", 2)
print(os.pread(fd, 5, 0))
''', "b'\\x00\\x00abc'\n"),
    'os_chdir': ('''
import os
os.chdir("/tmp")
open("rel.txt", "w").write("x")
print(os.getcwd(), os.path.exists("/tmp/rel.txt"))
''', '/tmp True\n'),
    'shutil_copy': ('''
import shutil
open("/tmp/a", "w").write("copy me")
shutil.copy("/tmp/a", "/tmp/b")
print(open("/tmp/b").read())
''', 'copy me\n'),
    'os_truncate': ('''
import os
open("/tmp/t", "w").write("abcdef")
os.truncate("/tmp/t", 2)
print(open("/tmp/t").read())
''', 'ab\n'),
    'resource_getrusage': ('''
import resource
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0)
''', 'True\n'),
    'os_times': ('''
import os
print(os.times().user >= 0)
''', 'True\n'),
    'select_select': ('''
import select, socket
a, b = socket.socketpair()
b.send(b"x")
print(select.select([a], [], [], 1)[0] == [a])
''', 'True\n'),
    'signal_alarm': ('''
import signal, time
class Timeout(Exception):
    pass
def handler(*_):
    raise Timeout
signal.signal(signal.SIGALRM, handler)
signal.alarm(1)
try:
    time.sleep(3)
except Timeout:
    print("alarm fired")
''', 'alarm fired\n'),
    'unclosed_socketpair': ('''
import socket
a, b = socket.socketpair()  # left open: at exit CPython's ResourceWarning formats repr(sock) (getpeername)
b.send(b"x")
print(a.recv(1))
''', "b'x'\n"),
    'uuid1': ('''
import uuid
print(uuid.uuid1().version)
''', '1\n'),
}


@pytest.mark.parametrize('name', sorted(PYTHON_COMMON_CALLS))
def test_python_common_call_not_killed(run, name):
    code, expected = PYTHON_COMMON_CALLS[name]
    res = run(code)
    assert ok(res) == expected, res.show()


def test_python_network_flag_runs_network_free_code(run):
    res = run('import json\nprint(json.dumps([1, 2]))', options=('--network',))
    assert ok(res) == '[1, 2]\n', res.show()


def test_python_network_flag_allows_inet_sockets(run):
    # urllib3 probes IPv6 at import and httpx builds a client: both must work in a network run.
    code = '''
import socket, requests, httpx
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.close()
with httpx.Client() as c:
    pass
print("inet socket ok", requests.adapters.HTTPAdapter.__name__)
'''
    res = run(code, options=('--network',))
    assert ok(res) == 'inet socket ok HTTPAdapter\n', res.show()


def test_python_timeout(run):
    res = run('import time\ntime.sleep(3)\nprint("woke")', options=('--timeout', '1'))
    contract(res)
    assert res['result'] == 'timeout', res.show()
    assert res['exit_code'] == 137, res.show()
    assert 'error: timeout' in res['error'], res.show()
    assert res['stdout'] == '', res.show()
    assert 900 <= res['duration_ms'] < 3000, res.show()
    assert res.wall < 3.0, f'difysandbox run took {res.wall:.2f} s' + res.show()


def test_python_memory_limit(run):
    res = run('b = bytearray(b"\\x01") * (512 << 20)\nprint("allocated", len(b))', options=('--memory', '128M'))
    contract(res)
    assert res['result'] == 'memory', res.show()
    assert 'error: memory limit exceeded' in res['error'], res.show()
    assert 'allocated' not in res['stdout'], res.show()


def test_python_default_memory_allows_256m(run):
    res = run('b = bytearray(b"\\x01") * (256 << 20)\nprint("allocated", len(b) >> 20)')
    assert ok(res) == 'allocated 256\n', res.show()
    assert res['memory_peak'] >= 256 << 20, res.show()


# ----------------------------------------------------------------------------------------- Node.js

def test_node_console_log(run):
    res = run('console.log("hello", 1 + 1); console.log({a: [1, "x"]})', 'nodejs')
    assert ok(res) == "hello 2\n{ a: [ 1, 'x' ] }\n", res.show()


def test_node_core_modules(run):
    code = '''
const mods = ['fs', 'path', 'crypto', 'zlib', 'util', 'events', 'url', 'buffer', 'os', 'stream', 'worker_threads',
  'querystring', 'string_decoder', 'assert', 'timers', 'readline'];
for (const m of mods) require(m);
const path = require('path'), crypto = require('crypto'), zlib = require('zlib'), util = require('util');
const { EventEmitter } = require('events');
console.log(path.join('/a', 'b', '../c'));
console.log(crypto.createHash('sha256').update('dify').digest('hex'));
console.log(zlib.gunzipSync(zlib.gzipSync('zip me')).toString());
console.log(util.format('%s=%d', 'x', 42));
const e = new EventEmitter(); e.on('ev', (v) => console.log('event', v)); e.emit('ev', 7);
console.log(new URL('https://example.com/a?b=1').searchParams.get('b'));
console.log(require('os').EOL === '\\n', typeof require('os').cpus().length);
const { Readable } = require('stream');
Readable.from(['s', 't']).on('data', (d) => process.stdout.write(d)).on('end', () => console.log('|end'));
'''
    res = run(code, 'nodejs')
    expected = ('/a/c\n' + hashlib.sha256(b'dify').hexdigest() + '\nzip me\nx=42\nevent 7\n1\ntrue number\nst|end\n')
    assert ok(res) == expected, res.show()


def test_node_buffer_bigint_intl(run):
    code = '''
console.log(Buffer.from('données').toString('base64'), Buffer.from('68656c6c6f', 'hex').toString());
console.log((2n ** 100n).toString(), typeof 1n);
const d = new Date(Date.UTC(2024, 0, 1, 0, 0, 0));
const f = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', year: 'numeric', month: '2-digit',
  day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
console.log(f.format(d));
console.log(new Intl.NumberFormat('de-DE').format(1234567.891));
console.log(Intl.DateTimeFormat().resolvedOptions().timeZone !== undefined);
'''
    res = run(code, 'nodejs')
    expected = (base64.b64encode('données'.encode()).decode() + ' hello\n' + str(2 ** 100) + ' bigint\n'
                '01/01/2024, 09:00\n1.234.567,891\ntrue\n')
    assert ok(res) == expected, res.show()


def test_node_async(run):
    code = '''
const sleep = (ms, v) => new Promise((r) => setTimeout(() => r(v), ms));
(async () => {
  const t0 = Date.now();
  const all = await Promise.all([sleep(50, 'a'), sleep(30, 'b'), sleep(10, 'c')]);
  const settled = await Promise.allSettled([Promise.reject(new Error('no')), sleep(5, 'ok')]);
  await new Promise((r) => setImmediate(r));
  console.log(all.join(''), settled.map((s) => s.status).join(','), Date.now() - t0 >= 50);
})();
'''
    res = run(code, 'nodejs')
    assert ok(res) == 'abc rejected,fulfilled true\n', res.show()


def test_node_worker_threads(run):
    code = '''
const { Worker } = require('worker_threads');
const run = (n) => new Promise((res, rej) => {
  const w = new Worker('const {parentPort, workerData} = require("worker_threads"); parentPort.postMessage(workerData * 2)',
    { eval: true, workerData: n });
  w.on('message', res); w.on('error', rej);
});
Promise.all([1, 2, 3].map(run)).then((r) => console.log(r.join(',')));
'''
    res = run(code, 'nodejs')
    assert ok(res) == '2,4,6\n', res.show()


def test_node_thrown_error(run):
    res = run('console.log("before");\nfunction boom() { throw new TypeError("kaputt"); }\nboom();\n', 'nodejs')
    contract(res)
    assert res['exit_code'] == 1 and res['result'] == 'error', res.show()
    assert 'TypeError: kaputt' in res['stderr'] and 'at boom' in res['stderr'], res.show()
    assert res['error'].startswith('process exited with code 1\n') and 'TypeError: kaputt' in res['error'], res.show()
    assert res['stdout'] == 'before\n', res.show()


def test_node_unhandled_rejection(run):
    res = run('Promise.reject(new Error("async kaputt"));', 'nodejs')
    contract(res)
    assert res['exit_code'] == 1 and res['result'] == 'error', res.show()
    assert 'async kaputt' in res['stderr'], res.show()


def test_node_process_exit(run):
    res = run('console.log("bye"); process.exit(4);', 'nodejs')
    contract(res)
    assert res['exit_code'] == 4 and res['result'] == 'error', res.show()
    assert res['error'].startswith('process exited with code 4'), res.show()
    assert res['stdout'] == 'bye\n', res.show()


# Notes every process.reallyExit(), the way out that skips Node's teardown of its environment and heap.
NODE_REALLY_EXIT_SPY = ('const spied = process.reallyExit;\n'
                        'process.reallyExit = function (c) {\n'
                        '  require("fs").writeSync(1, `reallyExit ${c}\\n`);\n'
                        '  return spied.call(process, c);\n'
                        '};\n')


def test_node_exit_keeps_its_order_and_code_without_the_teardown(run):
    """A run that ends naturally leaves through process.reallyExit() (src/runtime/nodejs.c, the fast exit),
    after every 'exit' listener, also one added late, with what they print. Anything else keeps Node's own
    way out: an exit code a listener set, an uncaught exception (whose stack trace comes after the
    listeners), an 'exit' the code emits itself."""
    res = run(NODE_REALLY_EXIT_SPY
              + 'process.on("exit", c => console.log("exit 1", c));\n'
              + 'setTimeout(() => { console.log("timer"); process.on("exit", c => console.log("exit 2", c)); }, 20);\n'
              + 'console.log("code");\n', 'nodejs')
    assert ok(res).splitlines() == ['code', 'timer', 'exit 1 0', 'exit 2 0', 'reallyExit 0'], res.show()

    res = run(NODE_REALLY_EXIT_SPY + 'process.on("exit", () => { process.exitCode = 3; });\nconsole.log("code");\n',
              'nodejs')
    contract(res)
    assert res['exit_code'] == 3 and res['stdout'] == 'code\n', res.show()

    res = run(NODE_REALLY_EXIT_SPY + 'process.on("exit", () => console.log("exit"));\nthrow new Error("late");\n',
              'nodejs')
    contract(res)
    assert res['exit_code'] == 1 and res['stdout'] == 'exit\n', res.show()
    assert 'Error: late' in res['stderr'], res.show()

    res = run(NODE_REALLY_EXIT_SPY + 'process.emit("exit", 0);\nconsole.log("still here");\n', 'nodejs')
    assert ok(res).splitlines() == ['still here', 'reallyExit 0'], res.show()


def test_node_stderr_is_not_an_error(run):
    res = run('console.error("warn"); console.log("fine");', 'nodejs')
    assert ok(res) == 'fine\n', res.show()
    assert res['stderr'] == 'warn\n' and res['error'] == '', res.show()


def test_node_large_output_preserved(run):
    size = 2 * 1024 * 1024
    code = f'''
let pattern = '';
for (let i = 0; i < 1000; i++) pattern += String.fromCharCode(48 + i % 75);
const data = pattern.repeat(Math.floor({size} / 1000) + 1).slice(0, {size});
process.stdout.write(data);
'''
    res = run(code, 'nodejs')
    pattern = ''.join(chr(48 + i % 75) for i in range(1000))
    expected = (pattern * (size // 1000 + 1))[:size]
    out = ok(res)
    assert len(out) == size and out == expected, f'got {len(out)} characters' + res.show()


def test_node_binary_output_stays_valid_json(run):
    res = run('process.stdout.write(Buffer.from([0x61, 0x00, 0x62, 0xff, 0xfe, 0x63, 0x0a]));', 'nodejs')
    out = ok(res)
    assert out.startswith('a\x00b') and out.endswith('c\n') and '\ufffd' in out, res.show()


def test_node_unicode(run):
    s = 'héllo 世界 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 مرحبا'
    res = run(f'const s = {json.dumps(s, ensure_ascii=False)}; console.log(s, [...s].length); console.error("エラー 🚫");',
              'nodejs')
    assert ok(res) == f'{s} {len(s)}\n', res.show()
    assert res['stderr'] == 'エラー 🚫\n', res.show()


def test_node_tmp_files(run):
    code = '''
const fs = require('fs'), os = require('os'), path = require('path');
const d = fs.mkdtempSync(path.join(os.tmpdir(), 'x-'));
fs.writeFileSync(path.join(d, 'f.txt'), 'node temp');
console.log(d.startsWith('/tmp/'), fs.readFileSync(path.join(d, 'f.txt'), 'utf8'), fs.readdirSync(d).join());
'''
    res = run(code, 'nodejs')
    assert ok(res) == 'true node temp f.txt\n', res.show()


NODE_COMMON_CALLS = {
    'fs_positional_write': ('''
const fs = require('fs');
const fd = fs.openSync('/tmp/f', 'w+');
fs.writeSync(fd, 'abc', 2);
console.log(JSON.stringify(fs.readFileSync('/tmp/f', 'latin1')));
''', '"\\u0000\\u0000abc"\n'),
    'fs_copy_file': ('''
const fs = require('fs');
fs.writeFileSync('/tmp/a', 'copy me');
fs.copyFileSync('/tmp/a', '/tmp/b');
console.log(fs.readFileSync('/tmp/b', 'utf8'));
''', 'copy me\n'),
    'process_chdir': ('''
process.chdir('/tmp');
require('fs').writeFileSync('rel.txt', 'x');
console.log(process.cwd(), require('fs').existsSync('/tmp/rel.txt'));
''', '/tmp true\n'),
    'process_cpu_usage': ('''
const u = process.cpuUsage();
console.log(u.user >= 0 && u.system >= 0);
''', 'true\n'),
}


@pytest.mark.parametrize('name', sorted(NODE_COMMON_CALLS))
def test_node_common_call_not_killed(run, name):
    code, expected = NODE_COMMON_CALLS[name]
    res = run(code, 'nodejs')
    assert ok(res) == expected, res.show()


def test_node_uid_is_the_reported_uid(run):
    res = run('console.log(process.getuid(), process.getgid())', 'nodejs')
    assert ok(res) == f'{res["uid"]} {res["uid"]}\n', res.show()


def test_node_timeout(run):
    res = run('setTimeout(() => console.log("woke"), 3000);', 'nodejs', options=('--timeout', '1'))
    contract(res)
    assert res['result'] == 'timeout' and res['exit_code'] == 137, res.show()
    assert 900 <= res['duration_ms'] < 3000, res.show()


def test_node_memory_limit(run):
    res = run('const b = Buffer.alloc(512 << 20, 1); console.log("allocated", b.length);', 'nodejs',
              options=('--memory', '128M'))
    contract(res)
    assert res['result'] == 'memory', res.show()
    assert 'allocated' not in res['stdout'], res.show()
