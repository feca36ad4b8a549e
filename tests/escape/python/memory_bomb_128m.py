# expect-result: memory
# options: --memory 128M
# attack: with --memory 128M, allocate and touch up to 1 GiB
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

chunks = []
for i in range(64):
    chunks.append(bytearray(b'\x01') * (16 << 20))
print(MARK, 'allocated', len(chunks) * 16, 'MiB')
