# arrow and humanize: shift and format times, and say sizes and durations the way people read them.
import datetime

import arrow
import humanize

t = arrow.get('2024-01-31T10:00:00+00:00')
assert t.shift(months=1).format('YYYY-MM-DD') == '2024-02-29'
assert t.to('Asia/Shanghai').format('HH:mm ZZ') == '18:00 +08:00'
assert t.shift(hours=-3).humanize(t) == '3 hours ago'
assert arrow.get('03/04/2024', 'DD/MM/YYYY').month == 4
assert humanize.naturalsize(1_500_000) == '1.5 MB'
assert humanize.intcomma(1234567) == '1,234,567'
assert humanize.naturaldelta(datetime.timedelta(minutes=90)) == 'an hour'
assert humanize.ordinal(22) == '22nd'
print(t.shift(months=1).format('YYYY-MM-DD'), humanize.naturalsize(1_500_000))
print('CORPUS-OK arrow_humanize')
