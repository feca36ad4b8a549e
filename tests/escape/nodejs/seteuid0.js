// expect-result: seccomp|error
// attack: process.seteuid(0)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
process.seteuid(0);
if (process.geteuid() === 0) console.log(MARK, 'euid 0');
