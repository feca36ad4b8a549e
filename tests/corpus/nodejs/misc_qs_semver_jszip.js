// corpus: npm qs@6.13.0 semver@7.6.3 jszip@3.10.1
// qs, semver and JSZip: nested query strings, version ranges, and a zip built in memory.
const assert = require('assert');
const qs = require('qs');
const semver = require('semver');
const JSZip = require('jszip');
assert.deepStrictEqual(qs.parse('a[b][c]=1&list[]=x&list[]=y'), { a: { b: { c: '1' } }, list: ['x', 'y'] });
assert.strictEqual(qs.stringify({ a: { b: 1 } }, { encode: false }), 'a[b]=1');
assert.ok(semver.satisfies('1.4.2', '^1.2.0') && !semver.satisfies('2.0.0', '^1.2.0'));
assert.strictEqual(semver.maxSatisfying(['1.0.0', '1.5.3', '2.1.0'], '~1.5'), '1.5.3');
const zip = new JSZip();
zip.file('report.csv', 'a,b\n1,2\n');
zip.folder('img').file('x.txt', 'hello');
zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' })
  .then((buf) => JSZip.loadAsync(buf))
  .then((z) => z.file('img/x.txt').async('string'))
  .then((text) => {
    assert.strictEqual(text, 'hello');
    console.log('zip ok');
    console.log('CORPUS-OK misc_qs_semver_jszip');
  });
