# Calls that libraries make as probes: pipe2, eventfd, memfd_create, extended attributes, stat.
import errno
import os

r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
os.write(w, b'x')
assert os.read(r, 1) == b'x'
efd = os.eventfd(0)
os.eventfd_write(efd, 3)
assert os.eventfd_read(efd) == 3
mfd = os.memfd_create('corpus')
os.write(mfd, b'in memory')
os.lseek(mfd, 0, os.SEEK_SET)
assert os.read(mfd, 9) == b'in memory'
open('/tmp/attr', 'w').close()
try:
    assert os.listxattr('/tmp/attr') == [] or True
    os.getxattr('/tmp/attr', 'user.corpus')
except OSError as e:
    # No such attribute, or none supported here: a library's normal answer, not a kill.
    assert e.errno in (errno.ENODATA, errno.ENOTSUP), e
st = os.stat('/tmp/attr')
assert st.st_size == 0
print('probes done')
print('CORPUS-OK os_calls')
