# Babel: currency, number and date formatting per locale (its CLDR data), as a multilingual reply needs.
import datetime

from babel.dates import format_date, format_timedelta
from babel.numbers import format_currency, format_decimal, parse_decimal

assert format_currency(1234.5, 'EUR', locale='de_DE') == '1.234,50\xa0€'
assert format_currency(1234.5, 'USD', locale='en_US') == '$1,234.50'
assert format_decimal(1234567.891, locale='fr_FR') in ('1\u202f234\u202f567,891', '1\xa0234\xa0567,891')
assert str(parse_decimal('1.234,5', locale='de_DE')) == '1234.5'
assert format_date(datetime.date(2024, 3, 1), format='long', locale='ja_JP') == '2024年3月1日'
assert format_date(datetime.date(2024, 3, 1), format='full', locale='es_ES') == 'viernes, 1 de marzo de 2024'
assert format_timedelta(datetime.timedelta(hours=3), locale='en') == '3 hours'
print(format_currency(1234.5, 'EUR', locale='de_DE'))
print('CORPUS-OK babel_i18n')
