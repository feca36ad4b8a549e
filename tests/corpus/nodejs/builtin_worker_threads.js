// worker_threads: split a computation across two workers and collect their results.
const assert = require('assert');
const { Worker } = require('worker_threads');
const src = `
const { parentPort, workerData } = require('worker_threads');
let s = 0;
for (let i = workerData.from; i < workerData.to; i++) s += i * i;
parentPort.postMessage(s);`;
const run = (from, to) => new Promise((resolve, reject) => {
  const w = new Worker(src, { eval: true, workerData: { from, to } });
  w.once('message', resolve);
  w.once('error', reject);
});
Promise.all([run(0, 100000), run(100000, 200000)]).then(([a, b]) => {
  let expect = 0;
  for (let i = 0; i < 200000; i++) expect += i * i;
  assert.strictEqual(a + b, expect);
  console.log('sum', a + b);
  console.log('CORPUS-OK builtin_worker_threads');
});
