// expect-result: ok
// attack: net.connect to 127.0.0.1:1 and 127.0.0.1:8194 without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const net = require('net');
let pending = 2;
for (const port of [1, 8194]) {
  const s = net.connect({ host: '127.0.0.1', port });
  s.on('connect', () => { console.log(MARK, 'connected to', port); s.destroy(); });
  s.on('error', (e) => { console.log(port, 'denied:', e.code); if (--pending === 0) process.exit(0); });
}
setTimeout(() => process.exit(0), 3000);
