# expect-result: ok
# attack: kill(-1, SIGKILL) only when PID 1 (proves a PID namespace); it must find nothing to kill
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import signal
me = os.getpid()
print('pid', me)
if me > 64:
    print(MARK, 'pid', me, 'is not that of a fresh PID namespace')
elif me != 1:
    print('refused: not PID 1')
else:
    try:
        os.kill(-1, signal.SIGKILL)
        print(MARK, 'kill(-1) found processes to kill')
    except ProcessLookupError:
        print('kill(-1): nothing to signal')
