// expect-result: seccomp|error
// attack: process.setuid(0)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
process.setuid(0);
if (process.getuid() === 0) console.log(MARK, 'uid 0');
