// corpus: npm lodash@4.17.21
// lodash: group, sort, aggregate and reshape records returned by an API.
const assert = require('assert');
const _ = require('lodash');
const orders = [
  { id: 1, customer: 'ada', total: 30, tags: ['new'] },
  { id: 2, customer: 'bob', total: 5, tags: [] },
  { id: 3, customer: 'ada', total: 12, tags: ['vip', 'new'] },
];
const byCustomer = _.mapValues(_.groupBy(orders, 'customer'), (os) => _.sumBy(os, 'total'));
assert.deepStrictEqual(byCustomer, { ada: 42, bob: 5 });
assert.deepStrictEqual(_.map(_.orderBy(orders, ['total'], ['desc']), 'id'), [1, 3, 2]);
assert.deepStrictEqual(_.uniq(_.flatMap(orders, 'tags')).sort(), ['new', 'vip']);
assert.strictEqual(_.get({ a: { b: [{ c: 7 }] } }, 'a.b[0].c'), 7);
assert.deepStrictEqual(_.chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
const merged = _.merge({ a: { x: 1 } }, { a: { y: 2 } });
assert.deepStrictEqual(merged, { a: { x: 1, y: 2 } });
assert.strictEqual(_.template('Hello <%= name %>!')({ name: 'Dify' }), 'Hello Dify!');
console.log(JSON.stringify(byCustomer));
console.log('CORPUS-OK lodash_data');
