// expect-result: seccomp|error
// attack: process.setgid(0)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
process.setgid(0);
if (process.getgid() === 0) console.log(MARK, 'gid 0');
