// expect-result: ok
// attack: worker_threads are threads and must work (the run exits 0 only if a worker answered)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const { Worker } = require('worker_threads');
const w = new Worker("require('worker_threads').parentPort.postMessage(6 * 7)", { eval: true });
const t = setTimeout(() => { console.log('no answer from the worker'); process.exit(3); }, 4000);
w.on('message', (m) => { console.log('worker says', m); clearTimeout(t); if (m !== 42) process.exit(4); });
w.on('error', (e) => { console.log('worker error', e); process.exit(5); });
