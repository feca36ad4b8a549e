// expect-result: ok
// attack: host secrets and service state must not be visible
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const paths = ['/etc/shadow', '/etc/gshadow', '/etc/sudoers', '/etc/ssh', '/etc/machine-id', '/etc/difysandbox',
  '/root', '/root/.ssh', '/home', '/var', '/var/lib/difysandbox', '/var/tmp', '/run', '/run/difysandbox',
  '/work', '/boot', '/srv', '/opt', '/mnt', '/usr/local', '/usr/sbin', '/etc/systemd'];
const found = paths.filter((p) => { try { fs.lstatSync(p); return true; } catch (e) { return false; } });
console.log('found', found);
if (found.length) console.log(MARK, 'visible:', found);
const users = fs.readFileSync('/etc/passwd', 'utf8').split('\n').filter(Boolean).map((l) => l.split(':')[0]);
const odd = users.filter((u) => u !== 'root' && u !== 'nobody' && !u.startsWith('sandbox'));
if (odd.length) console.log(MARK, 'host users in /etc/passwd:', odd.slice(0, 10));
