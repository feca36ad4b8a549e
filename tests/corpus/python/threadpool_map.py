# multiprocessing.pool.ThreadPool: a thread pool (no process), as many libraries use for parallel I/O.
from multiprocessing.pool import ThreadPool

def square(n):
    return n * n

with ThreadPool(4) as pool:
    squares = pool.map(square, range(20))
    async_result = pool.apply_async(sum, (range(101),))
    total = async_result.get(timeout=10)
    unordered = sorted(pool.imap_unordered(square, range(5)))
assert squares == [n * n for n in range(20)]
assert total == 5050 and unordered == [0, 1, 4, 9, 16]
print('sum', total)
print('CORPUS-OK threadpool_map')
