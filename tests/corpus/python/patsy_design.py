# patsy: design matrices from formulas with categorical terms (what statsmodels builds on).
import numpy as np
from patsy import dmatrices

data = {'y': [1.0, 2.0, 3.0, 4.0], 'x': [0.5, 1.5, 2.5, 3.5], 'g': ['a', 'b', 'a', 'b']}
y, X = dmatrices('y ~ x + C(g)', data)
assert X.design_info.column_names == ['Intercept', 'C(g)[T.b]', 'x'], X.design_info.column_names
assert np.asarray(X).shape == (4, 3) and np.asarray(y).ravel().tolist() == [1, 2, 3, 4]
assert np.asarray(X)[:, 1].tolist() == [0, 1, 0, 1]
print('columns', X.design_info.column_names)
print('CORPUS-OK patsy_design')
