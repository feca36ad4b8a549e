# PyYAML: safe_load a config document, change it, dump it back (with the C loader when present).
import yaml

doc = '''
service: billing
replicas: 3
limits: {cpu: "500m", memory: 256Mi}
endpoints:
  - name: health
    path: /health
  - name: pay
    path: /v1/pay
enabled: yes
'''
loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
cfg = yaml.load(doc, Loader=loader)
assert cfg['replicas'] == 3 and cfg['enabled'] is True and cfg['limits']['memory'] == '256Mi'
assert [e['path'] for e in cfg['endpoints']] == ['/health', '/v1/pay']
cfg['replicas'] += 1
out = yaml.safe_dump(cfg, sort_keys=True)
assert yaml.safe_load(out) == cfg and 'replicas: 4' in out
try:
    yaml.safe_load('!!python/object/apply:os.system ["true"]')
except yaml.constructor.ConstructorError:
    pass
else:
    raise AssertionError('safe_load built a Python object')
print('replicas', cfg['replicas'])
print('CORPUS-OK yaml_config')
