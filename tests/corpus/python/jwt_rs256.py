# PyJWT: an RS256 token signed with a fresh key and verified, and an HS256 one with an expiry.
import datetime

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
token = jwt.encode({'sub': 'user-7', 'role': 'admin'}, private, algorithm='RS256')
claims = jwt.decode(token, public, algorithms=['RS256'])
assert claims == {'sub': 'user-7', 'role': 'admin'}, claims
assert jwt.get_unverified_header(token)['alg'] == 'RS256'
exp = datetime.datetime.now(tz=datetime.timezone.utc) + datetime.timedelta(minutes=5)
hs = jwt.encode({'n': 1, 'exp': exp}, 'k' * 32, algorithm='HS256')
assert jwt.decode(hs, 'k' * 32, algorithms=['HS256'])['n'] == 1
try:
    jwt.decode(hs, 'wrong-key-wrong-key-wrong-key-00', algorithms=['HS256'])
except jwt.InvalidSignatureError:
    pass
else:
    raise AssertionError('a wrong key verified')
print('sub', claims['sub'])
print('CORPUS-OK jwt_rs256')
