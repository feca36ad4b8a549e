// corpus: npm mathjs@12.4.3 decimal.js@10.4.3 bignumber.js@9.1.2
// mathjs, decimal.js and bignumber.js: expressions, units, matrices, and exact money arithmetic.
const assert = require('assert');
const math = require('mathjs');
const Decimal = require('decimal.js');
const BigNumber = require('bignumber.js');
assert.strictEqual(math.evaluate('sqrt(3^2 + 4^2)'), 5);
assert.strictEqual(math.evaluate('5 cm + 2 inch to mm').toString(), '100.8 mm');
assert.deepStrictEqual(math.multiply([[1, 2], [3, 4]], [[5], [6]]), [[17], [39]]);
assert.strictEqual(math.det([[1, 2], [3, 4]]), -2);
assert.strictEqual(math.format(math.mean([1, 2, 3, 4]), { precision: 3 }), '2.5');
assert.strictEqual(0.1 + 0.2 === 0.3, false);
assert.strictEqual(new Decimal('0.1').plus('0.2').toString(), '0.3');
assert.strictEqual(new Decimal(1).dividedBy(3).toDecimalPlaces(5).toString(), '0.33333');
assert.strictEqual(new BigNumber('19.99').times(3).toFixed(2), '59.97');
console.log(new Decimal('0.1').plus('0.2').toString());
console.log('CORPUS-OK mathjs_decimal');
