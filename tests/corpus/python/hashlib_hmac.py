# hashlib, hmac and secrets: digests, a webhook signature, a password hash.
import base64
import hashlib
import hmac
import secrets

assert hashlib.sha256(b'abc').hexdigest() == 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
assert hashlib.md5(b'abc').hexdigest() == '900150983cd24fb0d6963f7d28e17f72'
assert hashlib.blake2b(b'abc', digest_size=16).hexdigest() == 'cf4ab791c62b8d2b2109c90275287816'
assert hashlib.sha3_256(b'').hexdigest().startswith('a7ffc6f8bf1ed766')
sig = hmac.new(b'whsec', b'{"event":"paid"}', hashlib.sha256).hexdigest()
assert hmac.compare_digest(sig, hmac.new(b'whsec', b'{"event":"paid"}', 'sha256').hexdigest())
dk = hashlib.pbkdf2_hmac('sha256', b'password', b'salt', 1000)
assert base64.b16encode(dk[:4]) == b'632C2812'
assert len(secrets.token_urlsafe(32)) >= 40 and secrets.token_hex(8) != secrets.token_hex(8)
print('hmac', sig[:12])
print('CORPUS-OK hashlib_hmac')
