// expect-result: ok
// attack: a mode-000 file of the run stays unreadable (no CAP_DAC_OVERRIDE)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const p = `/tmp/secret-${process.pid}`;
fs.writeFileSync(p, 'x');
fs.chmodSync(p, 0);
try { fs.readFileSync(p); console.log(MARK, 'read a mode-000 file'); } catch (e) { console.log('denied:', e.code); }
