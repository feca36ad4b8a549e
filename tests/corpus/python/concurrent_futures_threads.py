# concurrent.futures: a thread pool mapping work and collecting results as they complete.
import concurrent.futures
import hashlib
import threading

def work(n):
    h = hashlib.sha256(str(n).encode())
    for _ in range(2000):
        h = hashlib.sha256(h.digest())
    return n, h.hexdigest()[:8], threading.current_thread().name

with concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix='corpus') as pool:
    futures = [pool.submit(work, n) for n in range(16)]
    results = sorted(f.result() for f in concurrent.futures.as_completed(futures))
    mapped = list(pool.map(lambda n: n * n, range(10)))
assert [r[0] for r in results] == list(range(16))
assert all(r[2].startswith('corpus') for r in results)
assert mapped == [n * n for n in range(10)]
assert results[0][1] == work(0)[1]
print('threads used', len({r[2] for r in results}) >= 1)
print('CORPUS-OK concurrent_futures_threads')
