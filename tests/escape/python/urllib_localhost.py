# expect-result: ok
# attack: urllib to 127.0.0.1:8194 (the service port) without network
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import urllib.request
try:
    r = urllib.request.urlopen('http://127.0.0.1:8194/health', timeout=3)
    print(MARK, 'got a response', r.status)
except OSError as e:
    print('failed as it must:', type(e).__name__, e)
