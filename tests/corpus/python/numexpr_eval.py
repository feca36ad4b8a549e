# numexpr: evaluate an array expression with its own thread pool.
import numexpr as ne
import numpy as np

a = np.arange(1_000_000, dtype=np.float64)
b = np.full_like(a, 2.0)
r = ne.evaluate('2*a + 3*b**2 - sin(a)*0')
assert np.allclose(r, 2 * a + 12)
ne.set_num_threads(2)
assert float(ne.evaluate('sum(b)')) == 2_000_000.0
print('last', r[-1])
print('CORPUS-OK numexpr_eval')
