# mmap: write through a shared file mapping and flush it (msync), as on-disk caches do.
import mmap
import os

path = '/tmp/corpus.bin'
with open(path, 'wb') as f:
    f.write(b'\0' * 4096)
with open(path, 'r+b') as f:
    m = mmap.mmap(f.fileno(), 4096)
    m[0:5] = b'hello'
    m.flush()
    m.close()
with open(path, 'rb') as f:
    assert f.read(5) == b'hello'
anon = mmap.mmap(-1, 8192)
anon.write(b'xyz')
anon.seek(0)
assert anon.read(3) == b'xyz'
print('size', os.path.getsize(path))
print('CORPUS-OK mmap_flush')
