// crypto: hashes, HMAC, an RSA signature, AES-GCM, scrypt, random UUIDs and WebCrypto.
const assert = require('assert');
const crypto = require('crypto');
assert.strictEqual(crypto.createHash('sha256').update('abc').digest('hex'),
  'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
const mac = crypto.createHmac('sha256', 'whsec').update('{"event":"paid"}').digest('hex');
assert.strictEqual(mac.length, 64);
const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const sig = crypto.sign('sha256', Buffer.from('payload'), privateKey);
assert.ok(crypto.verify('sha256', Buffer.from('payload'), publicKey, sig));
const key = crypto.randomBytes(32), iv = crypto.randomBytes(12);
const c = crypto.createCipheriv('aes-256-gcm', key, iv);
const ct = Buffer.concat([c.update('secret'), c.final()]);
const dcp = crypto.createDecipheriv('aes-256-gcm', key, iv);
dcp.setAuthTag(c.getAuthTag());
assert.strictEqual(Buffer.concat([dcp.update(ct), dcp.final()]).toString(), 'secret');
assert.strictEqual(crypto.scryptSync('pw', 'salt', 16).length, 16);
assert.match(crypto.randomUUID(), /^[0-9a-f-]{36}$/);
crypto.webcrypto.subtle.digest('SHA-256', new TextEncoder().encode('abc')).then((buf) => {
  assert.strictEqual(Buffer.from(buf).toString('hex').slice(0, 8), 'ba7816bf');
  console.log('signature', sig.length);
  console.log('CORPUS-OK builtin_crypto');
});
