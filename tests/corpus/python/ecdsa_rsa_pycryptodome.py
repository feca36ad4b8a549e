# ecdsa, rsa and PyCryptodome: pure-Python and C signatures and ciphers.
import rsa
from Cryptodome.Cipher import AES
from Cryptodome.Hash import SHA256
from Cryptodome.Random import get_random_bytes
from ecdsa import NIST256p, SigningKey

sk = SigningKey.generate(curve=NIST256p)
sig = sk.sign(b'hello')
assert sk.get_verifying_key().verify(sig, b'hello')
pub, priv = rsa.newkeys(512)
assert rsa.decrypt(rsa.encrypt(b'hi', pub), priv) == b'hi'
key = get_random_bytes(16)
c = AES.new(key, AES.MODE_GCM)
ct, tag = c.encrypt_and_digest(b'secret data')
d = AES.new(key, AES.MODE_GCM, nonce=c.nonce)
assert d.decrypt_and_verify(ct, tag) == b'secret data'
assert SHA256.new(b'abc').hexdigest().startswith('ba7816bf')
print('ecdsa sig', len(sig))
print('CORPUS-OK ecdsa_rsa_pycryptodome')
