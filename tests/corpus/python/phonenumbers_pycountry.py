# phonenumbers and pycountry: normalise phone numbers and look up countries and currencies.
import phonenumbers
import pycountry

n = phonenumbers.parse('+44 20 7946 0958', None)
assert phonenumbers.is_valid_number(n)
assert phonenumbers.format_number(n, phonenumbers.PhoneNumberFormat.E164) == '+442079460958'
assert phonenumbers.region_code_for_number(n) == 'GB'
us = phonenumbers.parse('(202) 555-0143', 'US')
assert phonenumbers.format_number(us, phonenumbers.PhoneNumberFormat.INTERNATIONAL) == '+1 202-555-0143'
assert pycountry.countries.get(alpha_2='DE').name == 'Germany'
assert pycountry.currencies.get(alpha_3='JPY').name == 'Yen'
assert pycountry.languages.get(alpha_2='fr').name == 'French'
print('e164', phonenumbers.format_number(n, phonenumbers.PhoneNumberFormat.E164))
print('CORPUS-OK phonenumbers_pycountry')
