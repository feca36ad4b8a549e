// os and process: the interfaces, CPUs, memory and resource usage that libraries read to size themselves.
const assert = require('assert');
const os = require('os');
const ifaces = os.networkInterfaces();
assert.strictEqual(typeof ifaces, 'object');
for (const list of Object.values(ifaces)) for (const a of list) assert.ok(['IPv4', 'IPv6', 4, 6].includes(a.family), a.family);
// os.cpus() reads /proc/stat and /proc/cpuinfo, which a run's /proc (its own processes only) has not: it is
// empty in a run (docs/limits.md); the count libraries should size by is availableParallelism().
assert.ok(Array.isArray(os.cpus()));
assert.ok(os.availableParallelism() >= 1);
assert.ok(os.totalmem() > 0 && os.freemem() > 0 && os.freemem() <= os.totalmem());
const m = process.memoryUsage();
assert.ok(m.rss > 0 && m.heapUsed > 0 && m.heapUsed <= m.heapTotal, JSON.stringify(m));
const r = process.resourceUsage();
assert.ok(r.userCPUTime >= 0 && r.maxRSS > 0);
assert.ok(process.hrtime.bigint() > 0n && process.uptime() >= 0);
console.log('interfaces', Object.keys(ifaces).length, 'rss>0', m.rss > 0);
console.log('CORPUS-OK builtin_os_process');
