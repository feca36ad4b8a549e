# Group, pivot and summarise tabular data, then emit CSV and JSON, as a report node does.
import io

import pandas as pd

csv = io.StringIO("""region,product,units,price
north,apple,10,1.5
north,pear,4,2.0
south,apple,7,1.5
south,pear,12,2.0
south,plum,3,3.0
""")
df = pd.read_csv(csv)
df['revenue'] = df['units'] * df['price']
by_region = df.groupby('region')['revenue'].sum()
assert by_region.to_dict() == {'north': 23.0, 'south': 43.5}, by_region
pivot = df.pivot_table(index='region', columns='product', values='units', fill_value=0)
assert int(pivot.loc['south', 'pear']) == 12 and int(pivot.loc['north', 'plum']) == 0
df['when'] = pd.date_range('2024-01-01', periods=len(df), freq='D')
weekly = df.set_index('when').resample('W')['units'].sum()
assert int(weekly.sum()) == 36
out = df.to_json(orient='records')
assert '"product":"plum"' in out
print(by_region.to_dict())
print('CORPUS-OK pandas_report')
