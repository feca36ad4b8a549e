// expect-result: seccomp|error
// attack: process.setgroups([0])
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
process.setgroups([0]);
console.log(MARK, 'setgroups succeeded');
