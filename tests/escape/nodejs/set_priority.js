// expect-result: seccomp|error
// attack: os.setPriority(0, -20): raise the priority
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const os = require('os');
console.log('calling');
os.setPriority(0, -20);
if (os.getPriority(0) < 0) console.log(MARK, 'priority raised');
