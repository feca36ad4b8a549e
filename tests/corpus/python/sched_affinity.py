# os.sched_getaffinity / sched_setaffinity: pin this run to the first CPU it may use, as BLAS wrappers do.
import os

cpus = os.sched_getaffinity(0)
assert cpus and os.cpu_count() >= len(cpus)
first = min(cpus)
os.sched_setaffinity(0, {first})
assert os.sched_getaffinity(0) == {first}
os.sched_setaffinity(0, cpus)
assert os.sched_getaffinity(0) == cpus
print('cpus', len(cpus))
print('CORPUS-OK sched_affinity')
