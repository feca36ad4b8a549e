# statsmodels: an ordinary least-squares fit with a formula, and its summary.
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

rng = np.random.default_rng(1)
df = pd.DataFrame({'x': np.arange(100, dtype=float)})
df['y'] = 2.5 * df['x'] + 10 + rng.normal(scale=1.0, size=100)
fit = smf.ols('y ~ x', data=df).fit()
assert abs(fit.params['x'] - 2.5) < 0.05 and abs(fit.params['Intercept'] - 10) < 1, fit.params
assert fit.rsquared > 0.99
assert 'OLS Regression Results' in str(fit.summary())
print('slope', round(fit.params['x'], 1))
print('CORPUS-OK statsmodels_ols')
