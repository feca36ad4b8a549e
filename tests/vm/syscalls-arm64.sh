#!/bin/bash
# tests/vm/syscalls-arm64.sh - run IN an arm64 guest of the VM tier (tests/vm/run-arm64 leaves none up;
# boot one with tests/rig/vm --arch arm64, strace is in its image): the system calls that Python 3 and
# Node.js make on this architecture, for docs/syscalls-arm64.md.
#
# Each snippet runs under `strace -f -qq` with the interpreter's arguments of a run (python3 -I -B -c,
# node -e), outside the sandbox: the filter would kill strace's ptrace. Prints "LANGUAGE CALL COUNT
# SNIPPETS" for every call made, SNIPPETS the names of the snippets that made it.
set -u
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out" || exit 1

py() { printf '%s\n' "$2" >"py-$1.src"; }
js() { printf '%s\n' "$2" >"js-$1.src"; }

py print 'print(1)'
py stdlib 'import json, re, datetime, decimal, fractions, statistics, collections, itertools, base64, uuid
print(json.dumps({"d": str(datetime.date(2024, 1, 2)), "u": len(str(uuid.uuid4())), "m": statistics.mean([1, 2, 3])}))'
py hashlib 'import hashlib, hmac, secrets, random, zlib, gzip, io
print(hashlib.sha256(b"x").hexdigest()[:8], secrets.token_hex(4) != "", random.random() < 1, zlib.crc32(b"a"))
gzip.GzipFile(fileobj=io.BytesIO(), mode="wb").write(b"x")'
py threads 'import threading, concurrent.futures as cf
with cf.ThreadPoolExecutor(4) as ex: print(sum(ex.map(lambda x: x * x, range(100))))'
py asyncio 'import asyncio
async def f(i):
    await asyncio.sleep(0.01); return i
async def main(): print(sum(await asyncio.gather(*(f(i) for i in range(10)))))
asyncio.run(main())'
py sqlite3 'import sqlite3
db = sqlite3.connect(":memory:"); db.execute("create table t(v)"); db.executemany("insert into t values (?)", [(i,) for i in range(100)])
print(db.execute("select sum(v) from t").fetchone()[0])'
py files 'import os, tempfile, pathlib
p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"; p.write_text("x"); print(p.read_text(), os.stat(p).st_size, os.listdir(p.parent))
os.remove(p); os.rmdir(p.parent)'
py time 'import time, os, resource
time.sleep(0.01); print(time.time() > 0, time.monotonic() > 0, os.getpid() > 0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0)'
py libraries 'import requests, httpx, jinja2
print(jinja2.Template("{{ 6 * 7 }}").render())'
py pandas 'import numpy as np, pandas as pd
df = pd.DataFrame({"a": np.arange(1000), "b": np.random.rand(1000)})
print(int(df.a.sum()), round(float(np.linalg.det(np.eye(3))), 3), df.describe().shape)'
py socket 'import socket
s = socket.socket(); s.close(); print(socket.getaddrinfo("localhost", 80)[0][0])'

js print 'console.log(1)'
js intl 'console.log(new Intl.NumberFormat("de-DE").format(1234.5), new Date(0).toISOString(), "abc".localeCompare("abd"))'
js crypto 'const c = require("crypto"); console.log(c.createHash("sha256").update("x").digest("hex").slice(0, 8), c.randomBytes(4).length, c.randomUUID().length)'
js zlib 'const z = require("zlib"); console.log(z.gunzipSync(z.gzipSync(Buffer.from("x"))).toString())'
js wasm 'const b = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]);
console.log(new WebAssembly.Instance(new WebAssembly.Module(b)).exports.add(40, 2))'
js workers 'const { Worker } = require("worker_threads");
const w = new Worker("require(\"worker_threads\").parentPort.postMessage(42)", { eval: true }); w.on("message", console.log)'
js timers 'setTimeout(() => console.log("t"), 10); Promise.resolve(1).then(console.log); setImmediate(() => console.log("i"))'
js files 'const fs = require("fs"), os = require("os"), path = require("path");
const d = fs.mkdtempSync(path.join(os.tmpdir(), "x")); fs.writeFileSync(d + "/a", "x"); console.log(fs.readFileSync(d + "/a", "utf8"), fs.readdirSync(d));
fs.copyFileSync(d + "/a", d + "/b"); fs.rmSync(d, { recursive: true })'
js async_fs 'require("fs").promises.readFile("/etc/hostname", "utf8").then(s => console.log(s.length > 0))'
js modules 'require("http"); require("https"); require("net"); require("url"); require("util"); require("events"); require("stream"); console.log("ok")'
js json 'console.log(JSON.stringify(JSON.parse("{\"a\": [1, 2, 3]}")), [3, 1, 2].sort(), BigInt(2) ** 64n)'

for f in *.src; do
        name=${f%.src}
        case $name in
        py-*) strace -f -qq -o "$name.trace" /usr/bin/python3 -I -B -c "$(cat "$f")" >"$name.out" 2>&1 ;;
        js-*) strace -f -qq -o "$name.trace" /usr/bin/node -e "$(cat "$f")" >"$name.out" 2>&1 ;;
        esac || { echo "snippet $name failed:" >&2; cat "$name.out" >&2; exit 1; }
done
# "PID call(args..." (an unfinished call's "<... call resumed>" line is the same call): its name.
for t in *.trace; do
        name=${t%.trace}
        sed -nE 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' "$t" |
                sort | uniq -c | awk -v n="$name" '{print n, $2, $1}'
done | awk '{
        split($1, p, "-"); lang = (p[1] == "py") ? "python3" : "nodejs"; key = lang " " $2
        count[key] += $3; sub(/^[a-z]+-/, "", $1)
        if (key in count_seen) who[key] = who[key] "," $1; else who[key] = $1
        count_seen[key] = 1
} END { for (k in count) print k, count[k], who[k] }' | sort
