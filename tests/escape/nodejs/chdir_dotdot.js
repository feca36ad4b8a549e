// expect-result: ok|seccomp
// attack: process.chdir("..") 64 times from /tmp and readdir the directory reached
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
// (not proc: the run has a /proc of its own, of its own processes only; proc_sys.js checks it)
const HOST_ONLY = ['sys', 'root', 'home', 'var', 'boot', 'run', 'work', 'srv', 'opt', 'mnt', 'media', 'lost+found', 'snap'];
console.log('calling');
process.chdir('/tmp');
for (let i = 0; i < 64; i++) process.chdir('..');
const names = fs.readdirSync('.');
console.log('top', names);
const bad = names.filter((n) => HOST_ONLY.includes(n));
if (bad.length) console.log(MARK, 'host directories visible:', bad);
