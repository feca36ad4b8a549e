# expect-result: refused
# attack: os.posix_spawn of the interpreter (glibc clones with CLONE_VM|CLONE_VFORK)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

print('calling', flush=True)
pid = os.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], {})
print(MARK, 'posix_spawn created pid', pid)
