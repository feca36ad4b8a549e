# expect-result: timeout
# options: --timeout 2
# attack: sleep 10 s with --timeout 2
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import time
time.sleep(10)
print(MARK, 'slept past the timeout')
