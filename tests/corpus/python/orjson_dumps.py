# corpus: packages python3-orjson
# orjson (Rust; its first call is statx): fast JSON with dataclasses, datetimes and numpy arrays.
import dataclasses
import datetime

import numpy as np
import orjson

@dataclasses.dataclass
class Point:
    x: int
    y: int

out = orjson.dumps({'p': Point(1, 2), 'when': datetime.datetime(2024, 1, 2, 3, 4, 5), 'a': np.arange(3)},
                   option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS)
assert out == b'{"a":[0,1,2],"p":{"x":1,"y":2},"when":"2024-01-02T03:04:05"}', out
assert orjson.loads(out)['p'] == {'x': 1, 'y': 2}
print(out.decode())
print('CORPUS-OK orjson_dumps')
