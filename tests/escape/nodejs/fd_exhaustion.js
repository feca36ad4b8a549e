// expect-result: ok
// attack: open /dev/null up to 100000 times: EMFILE at RLIMIT_NOFILE (256)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const fds = [];
let err = null;
try { for (let i = 0; i < 100000; i++) fds.push(fs.openSync('/dev/null', 'r')); } catch (e) { err = e.code; }
console.log('opened', fds.length, 'stopped by', err);
if (fds.length > 256) console.log(MARK, fds.length, 'fds open');
