# corpus: network
# A thread serves HTTP on the run's own loopback (listen, accept) and the run requests it: a mock API in a test.
import http.client
import http.server
import json
import threading

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({'path': self.path, 'ok': True}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
t = threading.Thread(target=server.serve_forever, daemon=True)
t.start()
port = server.server_address[1]
conn = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
conn.request('GET', '/items?id=3')
resp = conn.getresponse()
data = json.loads(resp.read())
assert resp.status == 200 and data == {'path': '/items?id=3', 'ok': True}, data
server.shutdown()
print('served', data['path'])
print('CORPUS-OK http_server_thread')
