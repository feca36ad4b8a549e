# expect-result: output-truncated
# attack: write 64 MiB to stdout (cap 4 MiB); the marker goes to stderr only if all of it was accepted
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

chunk = 'A' * (1 << 20)
for i in range(64):
    sys.stdout.write(chunk)
    sys.stdout.flush()
sys.stderr.write(MARK + ' wrote 64 MiB\n')
