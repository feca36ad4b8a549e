// expect-result: ok
// attack: climb above / through ".." path components and readdir what is there
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
// (not proc: the run has a /proc of its own, of its own processes only; proc_sys.js checks it)
const HOST_ONLY = ['sys', 'root', 'home', 'var', 'boot', 'run', 'work', 'srv', 'opt', 'mnt', 'media', 'lost+found', 'snap'];
const root = fs.statSync('/');
for (const dir of ['/..', '/../../..', '/tmp/../../../..', '/usr/lib/../../../../..']) {
  const names = fs.readdirSync(dir);
  const bad = names.filter((n) => HOST_ONLY.includes(n));
  console.log(dir, names);
  if (bad.length) console.log(MARK, 'host directories visible through', dir, bad);
  const st = fs.statSync(dir);
  if (st.ino !== root.ino || st.dev !== root.dev) console.log(MARK, dir, 'is not /');
}
