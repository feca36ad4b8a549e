# scipy: optimisation, integration, statistics, interpolation and a sparse solve.
import numpy as np
from scipy import integrate, interpolate, optimize, sparse, stats
from scipy.sparse.linalg import spsolve

res = optimize.minimize(lambda v: (v[0] - 3) ** 2 + (v[1] + 1) ** 2, x0=[0, 0])
assert res.success and np.allclose(res.x, [3, -1], atol=1e-4), res
val, _ = integrate.quad(np.sin, 0, np.pi)
assert abs(val - 2) < 1e-9
a = np.array([5.1, 4.9, 5.0, 5.2, 4.8, 5.1, 5.0])
b = a + 1
t = stats.ttest_ind(a, b)
assert t.pvalue < 1e-6
f = interpolate.interp1d([0, 1, 2], [0, 10, 20])
assert float(f(1.5)) == 15.0
m = sparse.diags([1, -2, 1], [-1, 0, 1], shape=(100, 100), format='csc')
x = spsolve(m, np.ones(100))
assert np.allclose(m @ x, np.ones(100))
print('minimum', np.round(res.x, 3).tolist())
print('CORPUS-OK scipy_stats')
