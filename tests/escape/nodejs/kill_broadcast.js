// expect-result: ok
// attack: process.kill(-1, SIGKILL) only when PID 1; there must be nothing to kill
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
if (process.pid > 64) console.log(MARK, 'pid', process.pid, 'is not that of a fresh PID namespace');
else if (process.pid !== 1) console.log('refused: not PID 1');
else {
  try { process.kill(-1, 'SIGKILL'); console.log(MARK, 'kill(-1) found processes to kill'); }
  catch (e) { console.log('kill(-1):', e.code); }
}
