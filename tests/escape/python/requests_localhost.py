# expect-result: ok
# attack: requests.get("http://127.0.0.1:1") without network
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import requests
try:
    r = requests.get('http://127.0.0.1:1', timeout=3)
    print(MARK, 'got a response', r.status_code)
except requests.RequestException as e:
    print('failed as it must:', type(e).__name__)
