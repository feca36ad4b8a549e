// expect-result: seccomp|error
// attack: child_process.execSync of node printing the marker
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
const out = require('child_process').execSync(process.execPath + ` -e "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from execSync')"`);
console.log(String(out));
console.log(MARK, 'execSync ran a child');
