# expect-result: ok
# attack: a daemon thread that would write a file and print after main returns
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import threading, time


def late():
    time.sleep(1.0)
    with open('/tmp/late-%d' % os.getpid(), 'w') as f:
        f.write('late')
    print(MARK, 'a thread outlived main', flush=True)


threading.Thread(target=late, daemon=True).start()
print('main returns')
