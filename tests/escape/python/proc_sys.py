# expect-result: ok
# attack: /proc holds only the run's own processes (subset=pid: no /proc/sys, kcore, sysrq-trigger, meminfo, loadavg), /proc/1 is the run itself with the run's root, and /sys and host /dev nodes do not exist
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

absent = ['/proc/sys', '/proc/sysrq-trigger', '/proc/kcore', '/proc/meminfo', '/proc/loadavg', '/proc/uptime',
          '/proc/kallsyms', '/proc/mounts', '/proc/net', '/proc/config.gz', '/proc/keys', '/proc/modules',
          '/sys', '/sys/fs/cgroup', '/sys/kernel', '/dev/mem', '/dev/kmem', '/dev/port', '/dev/kmsg',
          '/dev/tty', '/dev/console', '/dev/ptmx', '/dev/pts', '/dev/mqueue', '/dev/sda', '/dev/vda',
          '/dev/nvme0n1', '/dev/fuse', '/dev/net/tun', '/dev/kvm', '/dev/vsock', '/dev/full', '/dev/random',
          '/run/docker.sock', '/var/run/docker.sock', '/run/systemd', '/run/dbus/system_bus_socket']
found = [p for p in absent if os.path.lexists(p)]
# /dev/shm is the run's own /tmp (POSIX semaphores for multiprocessing.Lock), a link, nothing of the host's
if os.readlink('/dev/shm') != '/tmp':
    found.append('/dev/shm -> ' + os.readlink('/dev/shm'))
# Every process /proc shows is the run's: PID 1 is this interpreter, and its root is the run's root.
pids = sorted(n for n in os.listdir('/proc') if n.isdigit())
if pids != ['1'] or os.getpid() != 1:
    found.append('processes %s (mine is %d)' % (pids, os.getpid()))
open('/tmp/mine', 'w').close()
if not os.path.exists('/proc/1/root/tmp/mine') or os.path.exists('/proc/1/root/etc/shadow'):
    found.append('/proc/1/root is not the run\'s root')
if b'DIFYSANDBOX_TEST_CANARY' in open('/proc/1/environ', 'rb').read():
    found.append('the caller\'s environment in /proc/1/environ')
print('found', found)
if found:
    print(MARK, 'present:', found)
