// corpus: npm axios@1.7.9
// corpus: network
// axios through the run's egress proxy to an HTTP server of the test (the harness puts its URL in place).
const assert = require('assert');
const axios = require('axios');
const url = '__CORPUS_HTTP_URL__';
(async () => {
  const r = await axios.get(url + '/items', { params: { id: 3 }, timeout: 10000 });
  assert.strictEqual(r.status, 200);
  assert.deepStrictEqual(r.data, { path: '/items?id=3', method: 'GET' });
  const p = await axios.post(url + '/orders', { qty: 2 }, { timeout: 10000 });
  assert.deepStrictEqual(p.data, { path: '/orders', method: 'POST', body: { qty: 2 } });
  await assert.rejects(axios.get(url + '/missing', { timeout: 10000 }), (e) => e.response.status === 404);
  console.log('status', r.status);
  console.log('CORPUS-OK axios_egress');
})();
