// Promises, timers, events, async iteration over a stream and readline: the everyday async of a node.
const assert = require('assert');
const { EventEmitter, once } = require('events');
const readline = require('readline');
const { Readable } = require('stream');
const { setTimeout: sleep } = require('timers/promises');
(async () => {
  const results = await Promise.all([1, 2, 3].map(async (n) => { await sleep(5 * (4 - n)); return n * 2; }));
  assert.deepStrictEqual(results, [2, 4, 6]);
  const settled = await Promise.allSettled([Promise.reject(new Error('x')), Promise.resolve(1)]);
  assert.deepStrictEqual(settled.map(s => s.status), ['rejected', 'fulfilled']);
  const em = new EventEmitter();
  setImmediate(() => em.emit('ready', 42));
  assert.deepStrictEqual(await once(em, 'ready'), [42]);
  const rl = readline.createInterface({ input: Readable.from(['a,1\nb,2\n', 'c,3\n']) });
  const rows = [];
  for await (const line of rl) rows.push(line.split(','));
  assert.deepStrictEqual(rows.map(r => r[0]), ['a', 'b', 'c']);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 10);
  await assert.rejects(sleep(5000, null, { signal: ac.signal }), { name: 'AbortError' });
  console.log('rows', rows.length);
  console.log('CORPUS-OK builtin_async_streams');
})();
