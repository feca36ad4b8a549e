# cryptography: Fernet tokens, an RSA signature, AES-GCM and a PEM round trip (OpenSSL 3 underneath).
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

f = Fernet(Fernet.generate_key())
assert f.decrypt(f.encrypt(b'order 1234')) == b'order 1234'
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
sig = key.sign(b'payload', padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.MAX_LENGTH),
               hashes.SHA256())
key.public_key().verify(sig, b'payload', padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                      salt_length=padding.PSS.MAX_LENGTH), hashes.SHA256())
pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                        serialization.BestAvailableEncryption(b'secret'))
again = serialization.load_pem_private_key(pem, password=b'secret')
assert again.private_numbers() == key.private_numbers()
aes = AESGCM(AESGCM.generate_key(bit_length=256))
nonce = b'\x00' * 12
assert aes.decrypt(nonce, aes.encrypt(nonce, b'data', b'aad'), b'aad') == b'data'
print('signature bytes', len(sig))
print('CORPUS-OK cryptography_rsa')
