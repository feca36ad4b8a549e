// expect-result: ok
// attack: AF_UNIX: listen on a /tmp path and connect to a host abstract socket without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const net = require('net');
const srv = net.createServer();
srv.on('listening', () => { console.log(MARK, 'AF_UNIX listening'); srv.close(); });
srv.on('error', (e) => console.log('listen denied:', e.code));
srv.listen('/tmp/s.sock');
const c = net.connect('\0/org/freedesktop/systemd1/notify');
c.on('connect', () => { console.log(MARK, 'connected to an abstract socket'); c.destroy(); });
c.on('error', (e) => console.log('connect denied:', e.code));
