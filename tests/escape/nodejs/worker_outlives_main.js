// expect-result: ok
// attack: a worker thread that would print after the main thread calls process.exit
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const { Worker } = require('worker_threads');
new Worker("setTimeout(() => { require('fs').writeFileSync('/tmp/late', 'x'); console.log('DIFYSANDBOX-' + 'ESCAPED', 'worker outlived main'); }, 1000)", { eval: true });
setTimeout(() => { console.log('main exits'); process.exit(0); }, 200);
