# expect-result: timeout
# options: --timeout 2
# attack: a non-daemon thread keeps the run alive after main returns: the timeout must end it
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import threading, time


def late():
    time.sleep(10)
    print(MARK, 'a non-daemon thread outlived the timeout', flush=True)


threading.Thread(target=late).start()
print('main returns')
