// expect-result: ok
// attack: process.kill(pid, 0) for PIDs 1..2000: only the run (PID 1) and its own threads exist
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const found = [], denied = [];
for (let pid = 1; pid <= 2000; pid++) {
  try { process.kill(pid, 0); found.push(pid); }
  catch (e) { if (e.code === 'EPERM') denied.push(pid); else if (e.code !== 'ESRCH') console.log(pid, e.code); }
}
console.log('pid', process.pid, 'found', found.slice(0, 20), 'denied', denied.slice(0, 20));
// Node's own threads answer kill(tid, 0) too; they are few and numbered just after PID 1. A PID above the task
// limit (64), a process we may not signal, or a PID other than 1 for us means another process is visible.
if (process.pid > 64 || denied.length || found.some((p) => p > 64))
  console.log(MARK, 'other processes visible: found', found.slice(0, 20), 'denied', denied.slice(0, 20));
