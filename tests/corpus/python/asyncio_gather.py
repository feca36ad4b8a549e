# asyncio: gather tasks, a queue of workers, a timeout, and to_thread for blocking work.
import asyncio
import time

async def fetch(i):
    await asyncio.sleep(0.01 * (5 - i))
    return i * 10

async def worker(q, out):
    while True:
        item = await q.get()
        out.append(item * 2)
        q.task_done()

async def main():
    got = await asyncio.gather(*(fetch(i) for i in range(5)))
    assert got == [0, 10, 20, 30, 40], got
    q, out = asyncio.Queue(), []
    workers = [asyncio.create_task(worker(q, out)) for _ in range(3)]
    for i in range(10):
        q.put_nowait(i)
    await q.join()
    for w in workers:
        w.cancel()
    assert sorted(out) == [i * 2 for i in range(10)]
    try:
        await asyncio.wait_for(asyncio.sleep(5), timeout=0.05)
    except asyncio.TimeoutError:
        pass
    else:
        raise AssertionError('no timeout')
    blocking = await asyncio.to_thread(lambda: (time.sleep(0.01), 'done')[1])
    assert blocking == 'done'
    return got

print('gathered', asyncio.run(main()))
print('CORPUS-OK asyncio_gather')
