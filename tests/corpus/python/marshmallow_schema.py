# marshmallow: load and validate an API payload into Python types, dump it back.
import datetime

from marshmallow import Schema, ValidationError, fields, validate

class Event(Schema):
    name = fields.Str(required=True, validate=validate.Length(min=1))
    when = fields.DateTime(required=True)
    seats = fields.Int(validate=validate.Range(min=1, max=500))
    tags = fields.List(fields.Str())

data = Event().load({'name': 'launch', 'when': '2024-05-01T18:00:00', 'seats': '120', 'tags': ['x']})
assert data['when'] == datetime.datetime(2024, 5, 1, 18) and data['seats'] == 120
assert Event().dump(data)['when'] == '2024-05-01T18:00:00'
try:
    Event().load({'name': '', 'when': 'soon', 'seats': 0})
except ValidationError as e:
    assert set(e.messages) == {'name', 'when', 'seats'}, e.messages
else:
    raise AssertionError('an invalid event loaded')
print('seats', data['seats'])
print('CORPUS-OK marshmallow_schema')
