// expect-result: refused|ok
// attack: child_process.fork of a node module
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
fs.writeFileSync('/tmp/child.js', "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from fork')");
console.log('calling');
const child = require('child_process').fork('/tmp/child.js');
child.on('error', (e) => console.log('denied:', e.code));
child.on('spawn', () => console.log(MARK, 'fork created a child', child.pid));
