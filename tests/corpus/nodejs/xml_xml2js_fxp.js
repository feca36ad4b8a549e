// corpus: npm xml2js@0.6.2 fast-xml-parser@4.5.0
// xml2js and fast-xml-parser: parse an XML order, and build XML back.
const assert = require('assert');
const xml2js = require('xml2js');
const { XMLParser, XMLBuilder } = require('fast-xml-parser');
const xml = '<order id="9"><item sku="a">2</item><item sku="b">5</item><paid>true</paid></order>';
xml2js.parseString(xml, (err, doc) => {
  assert.ifError(err);
  assert.strictEqual(doc.order.$.id, '9');
  assert.deepStrictEqual(doc.order.item.map((i) => i.$.sku), ['a', 'b']);
  const back = new xml2js.Builder({ headless: true, renderOpts: { pretty: false } }).buildObject({ r: { x: ['a', 'b'] } });
  assert.strictEqual(back, '<r><x>a</x><x>b</x></r>');
  const fx = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@' }).parse(xml);
  assert.strictEqual(fx.order['@id'], '9');
  assert.strictEqual(fx.order.item[1]['#text'], 5);
  assert.strictEqual(fx.order.paid, true);
  assert.strictEqual(new XMLBuilder().build({ a: { b: 1 } }), '<a><b>1</b></a>');
  console.log('items', doc.order.item.length);
  console.log('CORPUS-OK xml_xml2js_fxp');
});
