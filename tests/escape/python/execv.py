# expect-result: refused
# attack: os.execv of the interpreter with a program that prints the marker
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
os.execv(sys.executable, [sys.executable, '-I', '-c', "print('DIFYSANDBOX-' + 'ESCAPED', 'from exec')"])
