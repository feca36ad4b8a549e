// corpus: npm ajv@8.17.1 zod@3.23.8 validator@13.12.0
// ajv, zod and validator: check a tool call's arguments and the strings in them.
const assert = require('assert');
const Ajv = require('ajv');
const { z } = require('zod');
const validator = require('validator');
const ajv = new Ajv({ allErrors: true });
const check = ajv.compile({
  type: 'object', required: ['city', 'days'], additionalProperties: false,
  properties: { city: { type: 'string', minLength: 2 }, days: { type: 'integer', minimum: 1, maximum: 14 } },
});
assert.ok(check({ city: 'Oslo', days: 3 }));
assert.ok(!check({ city: 'O', days: 30, x: 1 }) && check.errors.length === 3, JSON.stringify(check.errors));
const Order = z.object({ id: z.coerce.number().int(), email: z.string().email(), items: z.array(z.string()).min(1) });
assert.deepStrictEqual(Order.parse({ id: '7', email: 'a@b.co', items: ['x'] }), { id: 7, email: 'a@b.co', items: ['x'] });
const bad = Order.safeParse({ id: 'x', email: 'nope', items: [] });
assert.ok(!bad.success && bad.error.issues.length === 3, JSON.stringify(bad.error && bad.error.issues));
assert.ok(validator.isEmail('ada@example.org') && !validator.isEmail('ada@'));
assert.ok(validator.isIP('192.0.2.1', 4) && validator.isUUID('aad03681-8b63-5304-89e0-8ca8f49461b5'));
console.log('errors', check.errors.length);
console.log('CORPUS-OK validation_ajv_zod');
