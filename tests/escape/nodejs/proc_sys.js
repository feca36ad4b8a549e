// expect-result: ok
// attack: /proc holds only the run's own processes (subset=pid: no /proc/sys, kcore, meminfo), /proc/1 is the run's root; /sys and host /dev nodes do not exist
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const paths = ['/proc/sys', '/proc/kcore', '/proc/sysrq-trigger', '/proc/meminfo', '/proc/loadavg', '/proc/mounts',
  '/sys', '/sys/fs/cgroup', '/dev/mem', '/dev/kmem', '/dev/kmsg', '/dev/tty', '/dev/console', '/dev/ptmx',
  '/dev/sda', '/dev/vda', '/dev/kvm', '/dev/net/tun', '/run/docker.sock', '/var/run/docker.sock',
  '/proc/1/root/etc/shadow'];
const found = paths.filter((p) => { try { fs.lstatSync(p); return true; } catch (e) { return false; } });
const pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
if (pids.join() !== '1' || process.pid !== 1) found.push(`processes ${pids} (mine is ${process.pid})`);
if (fs.readlinkSync('/dev/shm') !== '/tmp') found.push('/dev/shm -> ' + fs.readlinkSync('/dev/shm'));
console.log('found', found, 'rss', process.memoryUsage().rss > 0);
if (found.length) console.log(MARK, 'present:', found);
