# xmltodict and defusedxml: XML to dicts and back, and a parser that refuses an entity bomb.
import xmltodict
from defusedxml import EntitiesForbidden
from defusedxml.ElementTree import fromstring

doc = xmltodict.parse('<order id="9"><item sku="a">2</item><item sku="b">5</item><paid>true</paid></order>')
items = doc['order']['item']
assert doc['order']['@id'] == '9' and [i['@sku'] for i in items] == ['a', 'b'] and items[1]['#text'] == '5'
back = xmltodict.unparse({'r': {'@v': '1', 'x': ['a', 'b']}}, full_document=False)
assert back == '<r v="1"><x>a</x><x>b</x></r>', back
assert fromstring('<a><b>1</b></a>').find('b').text == '1'
bomb = '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><l>&b;</l>'
try:
    fromstring(bomb)
except EntitiesForbidden:
    pass
else:
    raise AssertionError('defusedxml accepted entities')
print(back)
print('CORPUS-OK xmltodict_defusedxml')
