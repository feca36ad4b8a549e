// expect-result: seccomp|ok
// options: --network
// attack: with --network the run shares the host network namespace: a TCP listener there would be a server on the host
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const srv = require('net').createServer();
srv.on('listening', () => { console.log(MARK, 'listening on the host network at', srv.address()); srv.close(); });
srv.on('error', (e) => console.log('denied:', e.code));
console.log('calling');
srv.listen(0, '127.0.0.1');
