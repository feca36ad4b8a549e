// corpus: npm uuid@9.0.1
// uuid: v4, v5 and v1 identifiers, validated.
const assert = require('assert');
const { v1, v4, v5, validate, version } = require('uuid');
const a = v4();
assert.ok(validate(a) && version(a) === 4);
assert.strictEqual(v5('example.org', v5.DNS), 'aad03681-8b63-5304-89e0-8ca8f49461b5');
const t = v1();
assert.ok(validate(t) && version(t) === 1 && t !== v1());
console.log('v5', v5('example.org', v5.DNS));
console.log('CORPUS-OK uuid_ids');
