// corpus: npm papaparse@5.4.1 csv-parse@5.5.6
// PapaParse and csv-parse: CSV with quotes and types into records, and back to CSV.
const assert = require('assert');
const Papa = require('papaparse');
const { parse } = require('csv-parse/sync');
const csv = 'name,qty,note\n"Smith, Ada",3,"said ""hi"""\nBob,5,\n';
const r = Papa.parse(csv, { header: true, dynamicTyping: true, skipEmptyLines: true });
assert.deepStrictEqual(r.errors, []);
assert.deepStrictEqual(r.data[0], { name: 'Smith, Ada', qty: 3, note: 'said "hi"' });
assert.strictEqual(Papa.unparse([{ a: 1, b: 'x,y' }]), 'a,b\r\n1,"x,y"');
const rows = parse(csv, { columns: true, skip_empty_lines: true, cast: true });
assert.deepStrictEqual(rows.map((x) => x.qty), [3, 5]);
console.log('rows', r.data.length);
console.log('CORPUS-OK csv_papaparse');
