# pytz: localize naive times, normalise across DST, list a country's zones.
import datetime

import pytz

eastern = pytz.timezone('US/Eastern')
naive = datetime.datetime(2024, 11, 3, 0, 30)
local = eastern.localize(naive)
assert local.utcoffset() == datetime.timedelta(hours=-4)
later = eastern.normalize(local + datetime.timedelta(hours=3))
assert later.utcoffset() == datetime.timedelta(hours=-5) and later.hour == 2, later
assert 'Europe/Paris' in pytz.country_timezones['fr']
utc = pytz.utc.localize(datetime.datetime(2024, 6, 1, 12)).astimezone(pytz.timezone('Australia/Sydney'))
assert utc.hour == 22
print('later', later.isoformat())
print('CORPUS-OK pytz_localize')
