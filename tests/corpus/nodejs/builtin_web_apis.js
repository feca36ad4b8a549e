// URL, URLSearchParams, Buffer, TextEncoder, structuredClone, JSON and BigInt: the glue of a code node.
const assert = require('assert');
const u = new URL('https://api.example.org/v1/search?q=caf%C3%A9&page=2#top');
assert.strictEqual(u.searchParams.get('q'), 'café');
u.searchParams.set('page', '3');
assert.strictEqual(u.toString(), 'https://api.example.org/v1/search?q=caf%C3%A9&page=3#top');
assert.strictEqual(Buffer.from('héllo').toString('base64'), 'aMOpbGxv');
assert.strictEqual(Buffer.from('aMOpbGxv', 'base64').toString(), 'héllo');
assert.deepStrictEqual([...new TextEncoder().encode('é')], [0xc3, 0xa9]);
const o = { d: new Date(0), m: new Map([[1, 2]]) };
const c = structuredClone(o);
assert.ok(c.m.get(1) === 2 && c.d.getTime() === 0 && c !== o);
assert.strictEqual((2n ** 64n).toString(), '18446744073709551616');
assert.deepStrictEqual(JSON.parse(JSON.stringify({ a: [1, { b: null }] })), { a: [1, { b: null }] });
console.log(u.searchParams.get('q'));
console.log('CORPUS-OK builtin_web_apis');
