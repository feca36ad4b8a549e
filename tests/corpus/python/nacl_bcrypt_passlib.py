# PyNaCl, bcrypt and passlib: authenticated encryption, signatures and password hashes.
import bcrypt
import nacl.secret
import nacl.signing
import nacl.utils
from passlib.hash import pbkdf2_sha256

box = nacl.secret.SecretBox(nacl.utils.random(nacl.secret.SecretBox.KEY_SIZE))
assert box.decrypt(box.encrypt(b'attack at dawn')) == b'attack at dawn'
sk = nacl.signing.SigningKey.generate()
signed = sk.sign(b'msg')
assert sk.verify_key.verify(signed) == b'msg'
h = bcrypt.hashpw(b'hunter2', bcrypt.gensalt(rounds=4))
assert bcrypt.checkpw(b'hunter2', h) and not bcrypt.checkpw(b'hunter3', h)
p = pbkdf2_sha256.using(rounds=1000).hash('s3cret')
assert pbkdf2_sha256.verify('s3cret', p) and not pbkdf2_sha256.verify('nope', p)
print('bcrypt prefix', h[:4].decode())
print('CORPUS-OK nacl_bcrypt_passlib')
