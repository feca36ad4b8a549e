// expect-result: ok
// attack: /dev holds only null, zero and urandom, and shm, a link to the run's own /tmp
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const names = fs.readdirSync('/dev').sort();
console.log('/dev:', names);
const extra = names.filter((n) => !['null', 'zero', 'urandom', 'shm'].includes(n));
if (fs.readlinkSync('/dev/shm') !== '/tmp') extra.push('shm -> ' + fs.readlinkSync('/dev/shm'));
if (extra.length) console.log(MARK, 'extra device entries:', extra);
