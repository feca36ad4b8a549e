// corpus: npm cheerio@1.0.0
// cheerio: extract a price table and links from HTML, as a scraping node does.
const assert = require('assert');
const cheerio = require('cheerio');
const $ = cheerio.load(`<html><body><h1>Prices</h1>
<table id="t"><tr><th>item</th><th>price</th></tr><tr><td>tea</td><td>3.20</td></tr><tr><td>cake</td><td>4.80</td></tr></table>
<a href="/a">A</a> <a class="ext" href="https://example.org/b">B</a></body></html>`);
const rows = $('#t tr').slice(1).map((i, tr) => [$(tr).find('td').map((j, td) => $(td).text()).get()]).get();
assert.deepStrictEqual(rows, [['tea', '3.20'], ['cake', '4.80']]);
assert.deepStrictEqual($('a').map((i, a) => $(a).attr('href')).get(), ['/a', 'https://example.org/b']);
assert.strictEqual($('a.ext').text(), 'B');
$('h1').text('Price list');
assert.ok($.html().includes('<h1>Price list</h1>'));
console.log('rows', rows.length);
console.log('CORPUS-OK cheerio_scrape');
