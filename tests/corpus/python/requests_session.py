# corpus: network
# requests and httpx against a server of the run's own on its loopback (no proxy for it), with retries.
import http.server
import json
import threading

import httpx
import requests
from requests.adapters import HTTPAdapter

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        out = json.dumps({'echo': body, 'ua': self.headers['User-Agent'][:8]}).encode()
        self.send_response(201)
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f'http://127.0.0.1:{server.server_address[1]}/echo'
s = requests.Session()
s.trust_env = False
s.mount('http://', HTTPAdapter(max_retries=2))
r = s.post(url, json={'q': 1}, timeout=5)
assert r.status_code == 201 and r.json() == {'echo': {'q': 1}, 'ua': 'python-r'}, r.text
with httpx.Client(trust_env=False, timeout=5) as c:
    r2 = c.post(url, json={'q': 2})
assert r2.status_code == 201 and r2.json()['echo'] == {'q': 2}
server.shutdown()
print('status', r.status_code)
print('CORPUS-OK requests_session')
