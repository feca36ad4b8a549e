# expect-result: ok|error
# attack: grow one /tmp file up to 256 MiB (EFBIG/ENOSPC or SIGXFSZ near 64 MiB)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

written, err = 0, None
block = b'\x02' * (1 << 20)
try:
    with open('/tmp/big', 'wb') as f:
        for i in range(256):
            f.write(block)
            f.flush()
            written += 1
except OSError as e:
    err = e
print('wrote', written, 'MiB; stopped by', err)
os.unlink('/tmp/big')
if written > 65:
    print(MARK, written, 'MiB in one /tmp file')
