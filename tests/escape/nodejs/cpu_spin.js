// expect-result: timeout
// options: --timeout 2
// attack: spin the CPU for up to 30 s with SIGTERM/SIGINT/SIGHUP ignored; --timeout 2
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => {});
const end = Date.now() + 30000;
while (Date.now() < end) {}
console.log(MARK, 'spun for 30 s');
