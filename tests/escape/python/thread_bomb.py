# expect-result: ok
# attack: start up to 1000 threads; more than 200 alive at once would mean no task limit
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import threading, time
threading.stack_size(256 * 1024)
ev = threading.Event()
lock = threading.Lock()
alive = maxalive = 0


def worker():
    global alive, maxalive
    with lock:
        alive += 1
        maxalive = max(maxalive, alive)
    ev.wait(10)
    with lock:
        alive -= 1


threads, err = [], None
for i in range(1000):
    t = threading.Thread(target=worker, daemon=True)
    try:
        t.start()
    except RuntimeError as e:
        err = e
        break
    threads.append(t)
time.sleep(0.2)
print('started', len(threads), 'max alive', maxalive, 'stopped by', err)
ev.set()
for t in threads:
    t.join(5)
if maxalive > 200:
    print(MARK, maxalive, 'threads alive at once')
