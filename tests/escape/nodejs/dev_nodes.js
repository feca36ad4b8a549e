// expect-result: ok
// attack: /dev holds only null, zero and urandom
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const names = require('fs').readdirSync('/dev').sort();
console.log('/dev:', names);
const extra = names.filter((n) => !['null', 'zero', 'urandom'].includes(n));
if (extra.length) console.log(MARK, 'extra device entries:', extra);
