# TOML: tomllib (standard library) reads, tomlkit edits a document keeping its comments.
import tomllib

import tomlkit

src = '''# deployment
[server]
host = "0.0.0.0"   # listen everywhere
port = 8080

[[workers]]
name = "a"
threads = 4
'''
data = tomllib.loads(src)
assert data['server']['port'] == 8080 and data['workers'][0]['threads'] == 4
doc = tomlkit.parse(src)
doc['server']['port'] = 9090
doc['workers'].append({'name': 'b', 'threads': 2})
out = tomlkit.dumps(doc)
assert '# listen everywhere' in out and 'port = 9090' in out
assert tomllib.loads(out)['workers'][1] == {'name': 'b', 'threads': 2}
print('port', tomllib.loads(out)['server']['port'])
print('CORPUS-OK toml_config')
