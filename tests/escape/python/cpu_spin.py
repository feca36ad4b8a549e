# expect-result: timeout
# options: --timeout 2
# attack: spin the CPU for up to 30 s with SIGTERM/SIGINT/SIGHUP/SIGXCPU/SIGALRM ignored; --timeout 2
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import signal, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
end = time.monotonic() + 30
while time.monotonic() < end:
    pass
print(MARK, 'spun for 30 s')
