# python-dateutil: fuzzy parsing, relative deltas, recurrence rules and time zones.
import datetime

from dateutil import parser, rrule, tz
from dateutil.relativedelta import relativedelta

d = parser.parse('Meeting on March 3rd, 2024 at 4:30pm', fuzzy=True)
assert d == datetime.datetime(2024, 3, 3, 16, 30), d
assert datetime.date(2024, 1, 31) + relativedelta(months=1) == datetime.date(2024, 2, 29)
rule = rrule.rrule(rrule.WEEKLY, byweekday=rrule.MO, dtstart=datetime.datetime(2024, 1, 1), count=3)
assert [x.day for x in rule] == [1, 8, 15]
ny = tz.gettz('America/New_York')
assert ny is not None
summer = datetime.datetime(2024, 7, 1, 12, tzinfo=ny)
assert summer.utcoffset() == datetime.timedelta(hours=-4)
assert parser.isoparse('2024-05-06T07:08:09+02:00').astimezone(tz.UTC).hour == 5
print('parsed', d.isoformat())
print('CORPUS-OK dateutil_rrule')
