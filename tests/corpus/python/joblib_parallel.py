# joblib: Parallel with threads (as scikit-learn uses it), and its hashing.
import math

import joblib
from joblib import Parallel, delayed

out = Parallel(n_jobs=2, prefer='threads')(delayed(math.factorial)(n) for n in range(10))
assert out == [math.factorial(n) for n in range(10)]
with joblib.parallel_backend('threading', n_jobs=2):
    assert Parallel()(delayed(pow)(2, n) for n in range(5)) == [1, 2, 4, 8, 16]
assert joblib.hash([1, 2, 3]) == joblib.hash([1, 2, 3]) != joblib.hash([1, 2])
assert joblib.cpu_count() >= 1
print('factorials', out[-1])
print('CORPUS-OK joblib_parallel')
