# Linear algebra with numpy's BLAS: a solve, an SVD and a least-squares fit.
import numpy as np

rng = np.random.default_rng(42)
a = rng.normal(size=(300, 300)) + 300 * np.eye(300)
b = rng.normal(size=300)
x = np.linalg.solve(a, b)
assert np.allclose(a @ x, b)
u, s, vt = np.linalg.svd(a[:50, :50])
assert np.allclose((u * s) @ vt, a[:50, :50])
t = np.linspace(0, 1, 50)
coef = np.polyfit(t, 3 * t + 1, 1)
assert np.allclose(coef, [3, 1])
print('fit', np.round(coef, 6).tolist())
print('CORPUS-OK numpy_linalg')
