// expect-result: ok
// attack: net.createServer().listen on 127.0.0.1 without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const srv = require('net').createServer();
srv.on('listening', () => { console.log(MARK, 'listening on', srv.address()); srv.close(); });
srv.on('error', (e) => console.log('denied:', e.code));
srv.listen(0, '127.0.0.1');
