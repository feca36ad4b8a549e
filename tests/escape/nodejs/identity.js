// expect-result: ok
// attack: the run is not root: uid/euid/gid/egid are the pool uid
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const ids = [process.getuid(), process.geteuid(), process.getgid(), process.getegid()];
console.log('ids', ids);
if (ids.includes(0)) console.log(MARK, 'running with id 0');
if (!ids.every((i) => i >= 10000 && i <= 10999)) { console.log('ids outside the pool'); process.exit(3); }
