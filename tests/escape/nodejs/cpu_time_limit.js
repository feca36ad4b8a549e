// expect-result: timeout
// options: --timeout 20
// attack: spin for up to 15 s of CPU with a generous --timeout 20: RLIMIT_CPU (5 s) must end it
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const end = Date.now() + 15000;
while (Date.now() < end) {}
console.log(MARK, 'used 15 s of CPU');
