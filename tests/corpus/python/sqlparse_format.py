# sqlparse: format and split SQL an LLM wrote, and find the tables it reads.
import sqlparse

sql = "select a,b from orders o join customers c on o.cid=c.id where o.total>10; delete from t"
stmts = sqlparse.split(sql)
assert len(stmts) == 2 and stmts[1] == 'delete from t'
pretty = sqlparse.format(stmts[0], reindent=True, keyword_case='upper')
assert pretty.startswith('SELECT a,\n') and 'JOIN customers c' in pretty, pretty
parsed = sqlparse.parse(stmts[0])[0]
assert parsed.get_type() == 'SELECT' and sqlparse.parse(stmts[1])[0].get_type() == 'DELETE'
print(pretty.splitlines()[0])
print('CORPUS-OK sqlparse_format')
