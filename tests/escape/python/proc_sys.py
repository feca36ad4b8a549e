# expect-result: ok
# attack: /proc, /proc/self/root, /proc/1/root, /proc/self/environ, /sys and host /dev nodes must not exist
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

paths = ['/proc', '/proc/self', '/proc/self/root', '/proc/1/root', '/proc/self/environ', '/proc/self/mem',
         '/proc/self/fd', '/proc/sys', '/proc/sysrq-trigger', '/proc/kcore', '/sys', '/sys/fs/cgroup',
         '/sys/kernel', '/dev/mem', '/dev/kmem', '/dev/port', '/dev/kmsg', '/dev/tty', '/dev/console',
         '/dev/ptmx', '/dev/pts', '/dev/mqueue', '/dev/sda', '/dev/vda', '/dev/nvme0n1',
         '/dev/fuse', '/dev/net/tun', '/dev/kvm', '/dev/vsock', '/dev/full', '/dev/random',
         '/run/docker.sock', '/var/run/docker.sock', '/run/systemd', '/run/dbus/system_bus_socket']
found = [p for p in paths if os.path.lexists(p)]
# /dev/shm is the run's own /tmp (POSIX semaphores for multiprocessing.Lock), a link, nothing of the host's
if os.readlink('/dev/shm') != '/tmp':
    found.append('/dev/shm -> ' + os.readlink('/dev/shm'))
print('found', found)
if found:
    print(MARK, 'present:', found)
