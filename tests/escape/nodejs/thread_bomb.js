// expect-result: ok|error|timeout|memory
// options: --timeout 3
// attack: start up to 100 worker threads; more than 64 online at once would mean no task limit
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const { Worker } = require('worker_threads');
const sab = new SharedArrayBuffer(8);
const cnt = new Int32Array(sab);
let created = 0, errors = 0;
for (let i = 0; i < 100; i++) {
  try {
    const w = new Worker("const c = new Int32Array(require('worker_threads').workerData); Atomics.add(c, 0, 1); Atomics.wait(c, 1, 0, 2500);",
      { eval: true, workerData: sab, resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2, stackSizeMb: 1 } });
    w.on('error', () => { errors++; });
    created++;
  } catch (e) { console.log('stopped by', e.code || e.message); break; }
}
setTimeout(() => {
  const online = Atomics.load(cnt, 0);
  console.log('created', created, 'online', online, 'errors', errors);
  if (online > 64) console.log(MARK, online, 'workers online at once');
  process.exit(0);
}, 1500);
