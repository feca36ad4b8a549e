# multiprocessing.Lock and Value (POSIX semaphores in /dev/shm) shared by threads, as libraries use them.
import multiprocessing
import threading

lock = multiprocessing.Lock()
counter = multiprocessing.Value('i', 0)

def bump():
    for _ in range(1000):
        with lock:
            counter.value += 1

threads = [threading.Thread(target=bump) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert counter.value == 4000, counter.value
sem = multiprocessing.BoundedSemaphore(2)
assert sem.acquire(timeout=1) and sem.acquire(timeout=1) and not sem.acquire(timeout=0.05)
print('counter', counter.value)
print('CORPUS-OK multiprocessing_lock')
