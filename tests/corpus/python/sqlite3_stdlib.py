# sqlite3 from the standard library: a table in memory and one in /tmp, JSON functions, a window query.
import json
import os
import sqlite3

if os.path.exists('/tmp/corpus.db'):
    os.remove('/tmp/corpus.db')
db = sqlite3.connect('/tmp/corpus.db')
db.execute('create table t (k text, v integer, doc text)')
db.executemany('insert into t values (?, ?, ?)', [('a', 1, json.dumps({'x': 1})), ('b', 5, json.dumps({'x': 2})),
                                                  ('a', 3, json.dumps({'x': 3}))])
db.commit()
rows = db.execute('select k, sum(v) from t group by k order by k').fetchall()
assert rows == [('a', 4), ('b', 5)], rows
assert db.execute("select sum(json_extract(doc, '$.x')) from t").fetchone()[0] == 6
ranked = db.execute('select v, rank() over (order by v desc) from t').fetchall()
assert ranked == [(5, 1), (3, 2), (1, 3)]
mem = sqlite3.connect(':memory:')
db.backup(mem)
assert mem.execute('select count(*) from t').fetchone()[0] == 3
print('groups', rows)
print('CORPUS-OK sqlite3_stdlib')
