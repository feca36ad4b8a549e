// expect-result: ok
// attack: fill /tmp with 1 MiB files up to 256 MiB: ENOSPC near 64 MiB
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const block = Buffer.alloc(1 << 20, 1);
let written = 0, err = null;
try { for (let i = 0; i < 256; i++) { fs.writeFileSync(`/tmp/fill-${i}`, block); written++; } }
catch (e) { err = e.code; }
console.log('wrote', written, 'MiB; stopped by', err);
for (let i = 0; i <= written; i++) { try { fs.unlinkSync(`/tmp/fill-${i}`); } catch (e) {} }
if (written > 65) console.log(MARK, written, 'MiB written to /tmp');
