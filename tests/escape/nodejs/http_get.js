// expect-result: ok
// attack: http.get("http://127.0.0.1:8194/health") without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
require('http').get('http://127.0.0.1:8194/health', (res) => { console.log(MARK, 'response', res.statusCode); res.resume(); })
  .on('error', (e) => console.log('failed as it must:', e.code));
