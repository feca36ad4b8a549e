# cachetools and toolz: memoise with an LRU and a TTL cache, and pipe data through functional helpers.
import cachetools
from toolz import curry, groupby, pipe, sliding_window
from toolz.curried import filter as cfilter, map as cmap

calls = []

@cachetools.cached(cachetools.LRUCache(maxsize=2))
def slow(x):
    calls.append(x)
    return x * 2

assert [slow(1), slow(2), slow(1), slow(3), slow(1)] == [2, 4, 2, 6, 2]
assert calls == [1, 2, 3]
ttl = cachetools.TTLCache(maxsize=10, ttl=60)
ttl['k'] = 'v'
assert ttl['k'] == 'v'
assert pipe(range(10), cfilter(lambda n: n % 2), cmap(lambda n: n * n), list) == [1, 9, 25, 49, 81]
assert groupby(len, ['a', 'bb', 'c', 'dd']) == {1: ['a', 'c'], 2: ['bb', 'dd']}
assert list(sliding_window(2, [1, 2, 3])) == [(1, 2), (2, 3)]
add = curry(lambda a, b: a + b)
assert add(1)(2) == 3
print('calls', calls)
print('CORPUS-OK cachetools_toolz')
