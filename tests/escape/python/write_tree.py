# expect-result: ok
# attack: create new uniquely named files and directories in the runtime tree; open /etc/passwd for append; chmod it to its own mode
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import uuid
tag = 'difysandbox-escape-' + uuid.uuid4().hex
stdlib = '/usr/lib/python%d.%d' % sys.version_info[:2]
dirs = ['/', '/etc', '/usr', '/usr/bin', '/usr/lib', stdlib, '/usr/lib/python3/dist-packages',
        '/usr/lib/x86_64-linux-gnu', '/usr/lib/difysandbox', '/dev', '/lib64', os.path.dirname(sys.executable)]
for d in dirs:
    p = os.path.join(d, tag)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        print('create in', d, '->', e.strerror)
    else:
        os.close(fd)
        os.unlink(p)
        print(MARK, 'created a file in', d)
    try:
        os.mkdir(p + '.d')
    except OSError as e:
        pass
    else:
        os.rmdir(p + '.d')
        print(MARK, 'created a directory in', d)
try:
    f = open('/etc/passwd', 'a')  # O_APPEND without O_TRUNC: opening changes nothing
    f.close()
    print(MARK, '/etc/passwd is writable')
except OSError as e:
    print('append open ->', e.strerror)
try:
    os.chmod('/etc/passwd', os.stat('/etc/passwd').st_mode & 0o7777)  # same mode: no change if it works
    print(MARK, 'chmod on /etc/passwd succeeded')
except OSError as e:
    print('chmod ->', e.strerror)
