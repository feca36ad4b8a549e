// expect-result: ok
// attack: /proc, /sys, /proc/self/environ, /proc/1/root and host /dev nodes must not exist
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const fs = require('fs');
const paths = ['/proc', '/proc/self', '/proc/self/root', '/proc/1/root', '/proc/self/environ', '/proc/self/mem',
  '/sys', '/sys/fs/cgroup', '/dev/mem', '/dev/kmem', '/dev/kmsg', '/dev/tty', '/dev/console', '/dev/ptmx',
  '/dev/shm', '/dev/sda', '/dev/vda', '/dev/kvm', '/dev/net/tun', '/run/docker.sock', '/var/run/docker.sock'];
const found = paths.filter((p) => { try { fs.lstatSync(p); return true; } catch (e) { return false; } });
console.log('found', found);
if (found.length) console.log(MARK, 'present:', found);
