// expect-result: ok|error
// options: --network
// attack: reach difysandbox-runner, which makes sandboxes as root, through its socket path
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const net = require('net');
for (const p of ['/run/difysandbox/runner.sock', '/run/difysandbox', '/run']) {
  if (fs.existsSync(p)) console.log(MARK, p, 'is visible inside the run');
}
const s = net.connect('/run/difysandbox/runner.sock');
s.on('connect', () => { console.log(MARK, 'connected to the runner socket'); s.destroy(); });
s.on('error', (e) => console.log('connect refused:', e.code));
