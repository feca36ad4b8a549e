# expect-result: ok|seccomp
# attack: subprocess.run of the interpreter printing the marker (pipe2 -> EPERM)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import subprocess
try:
    print('calling', flush=True)
    p = subprocess.run([sys.executable, '-I', '-c', "print('DIFYSANDBOX-' + 'ESCAPED', 'from subprocess')"],
                       capture_output=True, timeout=5)
    print(p.stdout.decode(), p.stderr.decode())
    print(MARK, 'subprocess ran, exit', p.returncode)
except OSError as e:
    print('denied:', type(e).__name__, e)
