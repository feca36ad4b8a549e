# expect-result: ok
# attack: fill /tmp with 1 MiB files up to 256 MiB: ENOSPC near 64 MiB
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import errno
written, err = 0, None
block = b'\x01' * (1 << 20)
try:
    for i in range(256):
        with open('/tmp/fill-%d' % i, 'wb') as f:
            f.write(block)
        written += 1
except OSError as e:
    err = e
print('wrote', written, 'MiB; stopped by', err)
for i in range(written + 1):
    try:
        os.unlink('/tmp/fill-%d' % i)
    except OSError:
        pass
if written > 65:
    print(MARK, written, 'MiB written to /tmp')
