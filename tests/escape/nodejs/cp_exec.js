// expect-result: refused|ok
// attack: child_process.exec of node printing the marker
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const cp = require('child_process');
console.log('calling');
cp.exec(process.execPath + ` -e "console.log('DIFYSANDBOX-' + 'ESCAPED', 'from exec')"`, (err, out, errout) => {
  if (err) { console.log('denied:', err.code, err.message); return; }
  console.log(out, errout);
  console.log(MARK, 'exec ran a child');
});
