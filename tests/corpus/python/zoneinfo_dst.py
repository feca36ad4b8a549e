# The standard library's zoneinfo: conversions across a daylight-saving change.
import datetime
from zoneinfo import ZoneInfo, available_timezones

berlin = ZoneInfo('Europe/Berlin')
before = datetime.datetime(2024, 3, 31, 1, 30, tzinfo=berlin)
after = before + datetime.timedelta(hours=1)
assert before.utcoffset() == datetime.timedelta(hours=1)
assert (before.astimezone(datetime.timezone.utc) + datetime.timedelta(hours=1)).astimezone(berlin).hour == 3
tokyo = datetime.datetime(2024, 6, 1, 9, tzinfo=ZoneInfo('Asia/Tokyo'))
assert tokyo.astimezone(ZoneInfo('America/Los_Angeles')).strftime('%Y-%m-%d %H:%M') == '2024-05-31 17:00'
assert {'UTC', 'Asia/Kolkata', 'America/Sao_Paulo'} <= available_timezones()
assert datetime.datetime(2024, 1, 1, tzinfo=ZoneInfo('Asia/Kolkata')).utcoffset() == datetime.timedelta(hours=5, minutes=30)
print('tokyo->la', tokyo.astimezone(ZoneInfo('America/Los_Angeles')).isoformat())
print('CORPUS-OK zoneinfo_dst')
