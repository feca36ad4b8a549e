// corpus: npm crypto-js@4.2.0 jsonwebtoken@9.0.2
// crypto-js and jsonwebtoken: AES and HMAC as front ends do it, and an RS256 and an HS256 token.
const assert = require('assert');
const CryptoJS = require('crypto-js');
const jwt = require('jsonwebtoken');
const crypto = require('crypto');
const ct = CryptoJS.AES.encrypt('order 1234', 'passphrase').toString();
assert.strictEqual(CryptoJS.AES.decrypt(ct, 'passphrase').toString(CryptoJS.enc.Utf8), 'order 1234');
assert.strictEqual(CryptoJS.SHA256('abc').toString(), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
assert.strictEqual(CryptoJS.HmacSHA256('msg', 'key').toString(CryptoJS.enc.Base64).length, 44);
const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const token = jwt.sign({ sub: 'user-7' }, privateKey, { algorithm: 'RS256', expiresIn: '5m' });
assert.strictEqual(jwt.verify(token, publicKey, { algorithms: ['RS256'] }).sub, 'user-7');
const hs = jwt.sign({ n: 1 }, 's3cret');
assert.throws(() => jwt.verify(hs, 'wrong'), /invalid signature/);
console.log('token parts', token.split('.').length);
console.log('CORPUS-OK cryptojs_jwt');
