# simplejson: exact decimals for money, and its C speedups.
from decimal import Decimal

import simplejson

doc = simplejson.loads('{"amount": 19.99, "tax": 0.10, "items": [1, 2]}', use_decimal=True)
assert doc['amount'] + doc['tax'] == Decimal('20.09')
out = simplejson.dumps({'total': Decimal('20.09'), 'ok': True}, use_decimal=True, sort_keys=True)
assert out == '{"ok": true, "total": 20.09}', out
assert simplejson.dumps([1, {'a': None}], separators=(',', ':')) == '[1,{"a":null}]'
print(out)
print('CORPUS-OK simplejson_decimal')
