// expect-result: output-truncated
// attack: write 64 MiB to stdout (cap 4 MiB); the marker goes to stderr only if all of it was accepted
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const chunk = Buffer.alloc(1 << 20, 65);
for (let i = 0; i < 64; i++) fs.writeSync(1, chunk);
fs.writeSync(2, MARK + ' wrote 64 MiB\n');
