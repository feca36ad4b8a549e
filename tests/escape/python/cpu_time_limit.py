# expect-result: timeout
# options: --timeout 20
# attack: spin for up to 15 s of CPU with a generous --timeout 20: RLIMIT_CPU (5 s) must end it
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import time
end = time.monotonic() + 15
while time.monotonic() < end:
    pass
print(MARK, 'used 15 s of CPU')
