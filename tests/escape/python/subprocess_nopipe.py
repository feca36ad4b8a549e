# expect-result: ok|seccomp
# attack: subprocess.call without pipes, output inherited
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import subprocess
try:
    print('calling', flush=True)
    rc = subprocess.call([sys.executable, '-I', '-c', "print('DIFYSANDBOX-' + 'ESCAPED', 'from subprocess.call')"],
                         timeout=5)
    print(MARK, 'subprocess.call ran, exit', rc)
except OSError as e:
    print('denied:', type(e).__name__, e)
