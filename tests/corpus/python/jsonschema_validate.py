# jsonschema: check a tool call's arguments against a schema and list every error.
import jsonschema

schema = {
    'type': 'object',
    'required': ['city', 'days'],
    'properties': {
        'city': {'type': 'string', 'minLength': 2},
        'days': {'type': 'integer', 'minimum': 1, 'maximum': 14},
        'units': {'enum': ['metric', 'imperial']},
    },
    'additionalProperties': False,
}
jsonschema.validate({'city': 'Oslo', 'days': 3, 'units': 'metric'}, schema)
v = jsonschema.Draft7Validator(schema)
errors = sorted(e.message for e in v.iter_errors({'city': 'O', 'days': 30, 'extra': 1}))
assert len(errors) == 3, errors
assert any('too short' in e or 'is too short' in e for e in errors), errors
assert any('30 is greater than the maximum of 14' in e for e in errors), errors
print('errors', len(errors))
print('CORPUS-OK jsonschema_validate')
