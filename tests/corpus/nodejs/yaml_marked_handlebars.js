// corpus: npm js-yaml@4.1.0 marked@12.0.2 handlebars@4.7.8
// js-yaml, marked and handlebars: a YAML config rendered through a template into Markdown, then HTML.
const assert = require('assert');
const yaml = require('js-yaml');
const { marked } = require('marked');
const Handlebars = require('handlebars');
const cfg = yaml.load('title: Report\nitems:\n  - {name: tea, qty: 2}\n  - {name: cake, qty: 1}\n');
assert.deepStrictEqual(cfg.items.map((i) => i.qty), [2, 1]);
assert.strictEqual(yaml.dump({ a: [1, 2] }), 'a:\n  - 1\n  - 2\n');
const md = Handlebars.compile('# {{title}}\n\n{{#each items}}- **{{name}}**: {{qty}}\n{{/each}}')(cfg);
assert.strictEqual(md, '# Report\n\n- **tea**: 2\n- **cake**: 1\n');
const html = marked.parse(md);
assert.ok(html.includes('<h1>Report</h1>') && html.includes('<strong>tea</strong>: 2'), html);
assert.ok(marked.parse('| a |\n|---|\n| 1 |').includes('<td>1</td>'));
console.log(html.split('\n')[0]);
console.log('CORPUS-OK yaml_marked_handlebars');
