# expect-result: output-truncated
# attack: write 64 MiB to stderr (cap 4 MiB); the marker goes to stdout only if all of it was accepted
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

chunk = 'E' * (1 << 20)
for i in range(64):
    sys.stderr.write(chunk)
    sys.stderr.flush()
print(MARK, 'wrote 64 MiB to stderr')
