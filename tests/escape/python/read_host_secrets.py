# expect-result: ok
# attack: host secrets and service state must not be visible: /etc/shadow, /root, /home, /var/lib/difysandbox, /run/difysandbox, config
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

paths = ['/etc/shadow', '/etc/gshadow', '/etc/sudoers', '/etc/ssh', '/etc/machine-id', '/etc/difysandbox',
         '/etc/group-', '/etc/passwd-', '/root', '/root/.ssh', '/home', '/var', '/var/lib/difysandbox',
         '/var/tmp', '/run', '/run/difysandbox', '/run/difysandbox/uids', '/work', '/boot', '/srv', '/opt',
         '/mnt', '/usr/local', '/usr/sbin', '/etc/systemd', '/usr/lib/systemd']
found = [p for p in paths if os.path.lexists(p)]
print('found', found)
if found:
    print(MARK, 'visible:', found)
with open('/etc/passwd') as f:
    users = [l.split(':')[0] for l in f if l.strip()]
odd = [u for u in users if u not in ('root', 'nobody') and not u.startswith('sandbox')]
print('passwd users besides root/nobody/sandbox*:', odd[:10])
if odd:
    print(MARK, 'host users in /etc/passwd:', odd[:10])
