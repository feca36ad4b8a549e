# A correlation heatmap of a DataFrame with seaborn, to PNG.
import io

import matplotlib
matplotlib.use('Agg')
import numpy as np
import pandas as pd
import seaborn as sns

rng = np.random.default_rng(7)
x = rng.normal(size=200)
df = pd.DataFrame({'x': x, 'y': 2 * x + rng.normal(scale=0.1, size=200), 'z': rng.normal(size=200)})
corr = df.corr()
assert corr.loc['x', 'y'] > 0.99 and abs(corr.loc['x', 'z']) < 0.3, corr
ax = sns.heatmap(corr, annot=True, fmt='.2f', cmap='vlag')
buf = io.BytesIO()
ax.figure.savefig(buf, format='png')
assert buf.getvalue()[:4] == b'\x89PNG'
print('corr xy', round(corr.loc['x', 'y'], 2))
print('CORPUS-OK seaborn_heatmap')
