# The regex module: Unicode properties, fuzzy matching, overlapping matches; and re for comparison.
import re

import regex

assert regex.findall(r'\p{Han}+', '价格 is 12 元, total 总计') == ['价格', '元', '总计']
assert regex.findall(r'\p{Lu}\p{Ll}+', 'Zoë and Ärger met Øystein') == ['Zoë', 'Ärger', 'Øystein']
m = regex.search(r'(?:invoice){e<=1}', 'please send the invoyce today')
assert m and m.group() == 'invoyce'
assert regex.findall(r'\d\d', '12345', overlapped=True) == ['12', '23', '34', '45']
emails = re.findall(r'[\w.+-]+@[\w-]+\.[\w.]+', 'a.b@x.org, c+d@y.co.uk')
assert emails == ['a.b@x.org', 'c+d@y.co.uk']
print('han', regex.findall(r'\p{Han}+', '价格 is'))
print('CORPUS-OK regex_unicode')
