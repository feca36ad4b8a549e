# holidays and inflect: business days around public holidays, and grammatical English output.
import datetime

import holidays
import inflect

us = holidays.US(years=2024)
assert datetime.date(2024, 7, 4) in us and datetime.date(2024, 7, 5) not in us
assert 'Independence Day' in us.get(datetime.date(2024, 7, 4))
de = holidays.DE(years=2024)
assert datetime.date(2024, 10, 3) in de
p = inflect.engine()
assert p.plural('child') == 'children' and p.plural('analysis') == 'analyses'
assert p.number_to_words(1234) == 'one thousand, two hundred and thirty-four'
assert p.ordinal(3) == '3rd' and p.a('hour') == 'an hour'
print('july 4th', us.get(datetime.date(2024, 7, 4)))
print('CORPUS-OK holidays_inflect')
