# corpus: network
# uuid.uuid1() reads the host's interfaces for a node id (read-only interface ioctls) in a run with network.
import uuid

a, b = uuid.uuid1(), uuid.uuid1()
assert a.version == 1 and a != b
assert 0 <= uuid.getnode() < 2 ** 48
assert uuid.uuid4().version == 4
assert uuid.uuid5(uuid.NAMESPACE_DNS, 'example.org') == uuid.UUID('aad03681-8b63-5304-89e0-8ca8f49461b5')
print('uuid1 version', a.version)
print('CORPUS-OK uuid1_network')
