// expect-result: ok|seccomp
// attack: symlinks in /tmp to /etc/shadow and host paths, then read through them
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
// (/proc/1/root is the run's own root: proc_sys.js checks it)
const targets = ['/etc/shadow', '/root', '/home', '/var/lib/difysandbox', '/run/difysandbox', '/work'];
targets.forEach((t, i) => {
  const link = `/tmp/link-${process.pid}-${i}`;
  console.log('calling');
  try { fs.symlinkSync(t, link); } catch (e) { console.log('symlink', t, e.code); return; }
  try {
    const st = fs.statSync(link);
    if (st.isDirectory()) console.log(MARK, 'listed', t, fs.readdirSync(link).slice(0, 5));
    else console.log(MARK, 'read', t, fs.readFileSync(link).length, 'bytes');
  } catch (e) { console.log('read through', t, e.code); }
});
