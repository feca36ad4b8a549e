# numpy.memmap: an array backed by a file in /tmp, written, flushed and reopened read-only.
import numpy as np

path = '/tmp/corpus.dat'
mm = np.memmap(path, dtype='float32', mode='w+', shape=(1000, 10))
mm[:] = np.arange(10000, dtype='float32').reshape(1000, 10)
mm.flush()
del mm
ro = np.memmap(path, dtype='float32', mode='r', shape=(1000, 10))
assert float(ro[999, 9]) == 9999.0 and float(ro.sum()) == 49995000.0
np.save('/tmp/corpus.npy', np.eye(3))
assert np.load('/tmp/corpus.npy', mmap_mode='r')[1, 1] == 1.0
print('sum', float(ro.sum()))
print('CORPUS-OK numpy_memmap')
