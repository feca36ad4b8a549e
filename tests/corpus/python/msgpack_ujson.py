# msgpack and ujson: compact binary and fast JSON encodings of the same record.
import msgpack
import ujson

record = {'id': 7, 'tags': ['a', 'b'], 'score': 0.5, 'blob': b'\x00\x01', 'ok': True}
packed = msgpack.packb(record, use_bin_type=True)
assert msgpack.unpackb(packed, raw=False) == record
assert len(packed) < len(repr(record))
text = ujson.dumps({k: v for k, v in record.items() if k != 'blob'}, sort_keys=True)
assert text == '{"id":7,"ok":true,"score":0.5,"tags":["a","b"]}', text
assert ujson.loads(text)['tags'] == ['a', 'b']
print('packed', len(packed))
print('CORPUS-OK msgpack_ujson')
