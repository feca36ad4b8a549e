# expect-result: ok
# attack: the snippet source must not be on any file of the run (it arrives on fd 3)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

# CODE-ON-DISK-TOKEN-5c1e9
token = ('CODE-ON-DISK-' + 'TOKEN-5c1e9').encode()
hits, scanned = [], 0
skip = {'/usr/lib/x86_64-linux-gnu', '/usr/lib/python3/dist-packages', '/dev'}
for top, dirs, files in os.walk('/'):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for name in files:
        p = os.path.join(top, name)
        try:
            if os.path.islink(p) or os.path.getsize(p) > (1 << 20):
                continue
            with open(p, 'rb') as f:
                scanned += 1
                if token in f.read():
                    hits.append(p)
        except OSError:
            pass
print('scanned', scanned, 'files; hits', hits)
if hits:
    print(MARK, 'source found on disk:', hits)
if '__file__' in globals():
    print(MARK, '__file__ is', __file__)
