# Thread names: libraries name their threads with prctl(PR_SET_NAME) (pthread_setname_np); read them back.
import ctypes
import threading

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME, PR_GET_NAME = 15, 16
names = {}

def named(label):
    assert libc.prctl(PR_SET_NAME, label.encode(), 0, 0, 0) == 0, ctypes.get_errno()
    buf = ctypes.create_string_buffer(16)
    assert libc.prctl(PR_GET_NAME, buf, 0, 0, 0) == 0, ctypes.get_errno()
    names[label] = buf.value.decode()

threads = [threading.Thread(target=named, args=(f'worker-{i}',), name=f'worker-{i}') for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert names == {f'worker-{i}': f'worker-{i}' for i in range(3)}, names
print('named', sorted(names))
print('CORPUS-OK thread_names')
