// expect-result: output-truncated
// attack: write 64 MiB to stderr (cap 4 MiB); the marker goes to stdout only if all of it was accepted
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const chunk = Buffer.alloc(1 << 20, 69);
for (let i = 0; i < 64; i++) fs.writeSync(2, chunk);
fs.writeSync(1, MARK + ' wrote 64 MiB to stderr\n');
