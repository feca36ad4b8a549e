// expect-result: seccomp|ok|error
// attack: child_process.fork bounded to 50 children, each exits at once
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
fs.writeFileSync('/tmp/exit.js', 'process.exit(0)');
let spawned = 0, failed = 0;
console.log('calling');
for (let i = 0; i < 50; i++) {
  try {
    const c = require('child_process').fork('/tmp/exit.js');
    c.on('spawn', () => { spawned++; });
    c.on('error', () => { failed++; });
  } catch (e) { failed++; break; }
}
setTimeout(() => {
  console.log('spawned', spawned, 'failed', failed);
  if (spawned > 0) console.log(MARK, spawned, 'children');
}, 1000);
