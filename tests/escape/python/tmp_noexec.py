# expect-result: ok
# attack: a file the run wrote in /tmp cannot be mapped executable (noexec)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import mmap
p = '/tmp/code-%d' % os.getpid()
with open(p, 'wb') as f:
    f.write(b'\xc3' * 4096)
with open(p, 'rb') as f:
    try:
        m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
        print(MARK, 'mapped a /tmp file PROT_EXEC')
    except OSError as e:
        print('denied:', e)
