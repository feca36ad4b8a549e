// expect-result: timeout
// options: --timeout 2
// attack: a 10 s timer with --timeout 2
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
setTimeout(() => console.log(MARK, 'slept past the timeout'), 10000);
