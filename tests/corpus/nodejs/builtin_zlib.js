// zlib: gzip, deflate and brotli, synchronous and streamed.
const assert = require('assert');
const zlib = require('zlib');
const { pipeline, Readable, Writable } = require('stream');
const data = Buffer.from('{"event":"page_view","user":12345}\n'.repeat(2000));
for (const [c, d] of [[zlib.gzipSync, zlib.gunzipSync], [zlib.deflateSync, zlib.inflateSync],
                      [zlib.brotliCompressSync, zlib.brotliDecompressSync]]) {
  const packed = c(data);
  assert.ok(packed.length < data.length / 20, c.name);
  assert.ok(d(packed).equals(data), d.name);
}
const chunks = [];
pipeline(Readable.from([data]), zlib.createGzip(), zlib.createGunzip(),
  new Writable({ write(chunk, enc, cb) { chunks.push(chunk); cb(); } }),
  (err) => {
    assert.ifError(err);
    assert.ok(Buffer.concat(chunks).equals(data));
    console.log('streamed', Buffer.concat(chunks).length);
    console.log('CORPUS-OK builtin_zlib');
  });
