// expect-result: ok
// options: --network
// attack: a TCP server in a run with network: listen() is allowed because the run's network namespace is its own, holding only loopback; an interface beyond it would make the server reachable from elsewhere
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const net = require('net');
const os = require('os');
const srv = net.createServer((c) => c.end('hello'));
srv.on('error', (e) => { console.log('listen failed:', e.code); process.exitCode = 3; });
srv.listen(0, '127.0.0.1', () => {
  const c = net.connect(srv.address().port, '127.0.0.1');
  c.on('data', (d) => {
    console.log('own loopback answers', d.toString());
    const names = Object.keys(os.networkInterfaces()).sort();
    console.log('interfaces', names);
    if (names.some((n) => n !== 'lo')) console.log(MARK, 'the run sees interfaces beyond its loopback:', names);
    c.destroy(); srv.close();
  });
});
