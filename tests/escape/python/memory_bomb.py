# expect-result: memory
# attack: allocate and touch up to 2 GiB in 64 MiB steps (default limit 512 MiB)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

chunks = []
for i in range(32):
    chunks.append(bytearray(b'\x01') * (64 << 20))
print(MARK, 'allocated', len(chunks) * 64, 'MiB')
