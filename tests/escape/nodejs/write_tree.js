// expect-result: ok
// attack: create new uniquely named files and directories in the runtime tree; open /etc/passwd for append
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs'), path = require('path'), crypto = require('crypto');
const tag = 'difysandbox-escape-' + crypto.randomBytes(8).toString('hex');
const dirs = ['/', '/etc', '/usr', '/usr/bin', '/usr/lib', '/usr/lib/x86_64-linux-gnu', '/usr/lib/difysandbox', '/dev',
  '/lib64', path.dirname(process.execPath)];
for (const d of dirs) {
  const p = path.join(d, tag);
  try { fs.closeSync(fs.openSync(p, 'wx')); fs.unlinkSync(p); console.log(MARK, 'created a file in', d); }
  catch (e) { console.log('create in', d, '->', e.code); }
  try { fs.mkdirSync(p + '.d'); fs.rmdirSync(p + '.d'); console.log(MARK, 'created a directory in', d); }
  catch (e) {}
}
try { fs.closeSync(fs.openSync('/etc/passwd', 'a')); console.log(MARK, '/etc/passwd is writable'); }
catch (e) { console.log('append open ->', e.code); }
try { fs.chmodSync('/etc/passwd', fs.statSync('/etc/passwd').mode & 0o7777); console.log(MARK, 'chmod /etc/passwd succeeded'); }
catch (e) { console.log('chmod ->', e.code); }
