# expect-result: ok|seccomp
# attack: os.popen (subprocess with a pipe)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

try:
    print('calling', flush=True)
    out = os.popen(sys.executable + ' -I -c "print(1)"').read()
    print(MARK, 'popen ran', repr(out))
except OSError as e:
    print('denied:', type(e).__name__, e)
