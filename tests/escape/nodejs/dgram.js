// expect-result: ok
// attack: a UDP socket bound and sending without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const s = require('dgram').createSocket('udp4');
s.on('error', (e) => { console.log('denied:', e.code); s.close(); });
s.bind(0, '127.0.0.1', () => { console.log(MARK, 'udp socket bound'); s.close(); });
