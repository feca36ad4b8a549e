// expect-result: refused|ok
// attack: child_process.spawn of node with inherited stdio
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
const child = require('child_process').spawn(process.execPath, ['-e', "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from a child')"], { stdio: 'inherit' });
child.on('error', (e) => console.log('denied:', e.code));
child.on('spawn', () => console.log(MARK, 'spawn created a child', child.pid));
