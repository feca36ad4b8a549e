# croniter and iso8601: the next runs of a schedule, and strict ISO 8601 parsing.
import datetime

import iso8601
from croniter import croniter

base = datetime.datetime(2024, 2, 27, 10, 0)
it = croniter('30 9 * * 1-5', base)
nxt = [it.get_next(datetime.datetime) for _ in range(3)]
assert nxt == [datetime.datetime(2024, 2, 28, 9, 30), datetime.datetime(2024, 2, 29, 9, 30),
               datetime.datetime(2024, 3, 1, 9, 30)], nxt
assert croniter.is_valid('*/5 * * * *') and not croniter.is_valid('61 * * * *')
d = iso8601.parse_date('2024-03-10T12:00:00+05:30')
assert d.utcoffset() == datetime.timedelta(hours=5, minutes=30)
try:
    iso8601.parse_date('not a date')
except iso8601.ParseError:
    pass
else:
    raise AssertionError('parsed garbage')
print('next', nxt[0].isoformat())
print('CORPUS-OK croniter_iso8601')
