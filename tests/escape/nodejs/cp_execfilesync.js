// expect-result: seccomp|error
// attack: child_process.execFileSync of node
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
const out = require('child_process').execFileSync(process.execPath, ['-e', "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from a child')"]);
console.log(String(out));
console.log(MARK, 'execFileSync ran a child');
