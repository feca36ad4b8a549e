# tabulate and prettytable: render rows as a Markdown table and as ASCII for a chat answer.
from prettytable import PrettyTable
from tabulate import tabulate

rows = [['tea', 2, 3.5], ['cake', 1, 4.8]]
md = tabulate(rows, headers=['item', 'qty', 'price'], tablefmt='pipe')
lines = md.splitlines()
assert lines[0].split('|')[1].strip() == 'item' and len(lines) == 4, md
assert '| cake   |     1 |     4.8 |' in md, md
t = PrettyTable(['item', 'qty'])
for r in rows:
    t.add_row(r[:2])
t.sortby = 'qty'
ascii_ = t.get_string()
assert ascii_.index('cake') < ascii_.index('tea') and ascii_.startswith('+')
print(lines[0])
print('CORPUS-OK tabulate_table')
