// expect-result: seccomp|ok
// attack: child_process.spawnSync of node
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
console.log('calling');
const r = require('child_process').spawnSync(process.execPath, ['-e', "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from a child')"]);
if (r.error) console.log('denied:', r.error.code);
else console.log(MARK, 'spawnSync ran a child, pid', r.pid, String(r.stdout));
