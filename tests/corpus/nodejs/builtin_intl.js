// Intl with full ICU: dates, currencies, plurals, collation, relative times and word segmentation in many locales.
const assert = require('assert');
const d = new Date(Date.UTC(2024, 2, 1, 12, 0, 0));
assert.strictEqual(new Intl.DateTimeFormat('ja-JP', { dateStyle: 'long', timeZone: 'Asia/Tokyo' }).format(d), '2024年3月1日');
assert.strictEqual(new Intl.DateTimeFormat('de-DE', { dateStyle: 'full', timeZone: 'Europe/Berlin' }).format(d), 'Freitag, 1. März 2024');
assert.strictEqual(new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(1234.5), '1.234,50\u00a0€');
assert.strictEqual(new Intl.NumberFormat('en-IN').format(12345678), '1,23,45,678');
assert.strictEqual(new Intl.PluralRules('ar-EG').select(3), 'few');
assert.strictEqual(new Intl.RelativeTimeFormat('es', { numeric: 'auto' }).format(-1, 'day'), 'ayer');
assert.deepStrictEqual(['ä', 'a', 'z'].sort(new Intl.Collator('sv').compare), ['a', 'z', 'ä']);
const words = [...new Intl.Segmenter('zh', { granularity: 'word' }).segment('我喜欢编程')].filter(s => s.isWordLike);
assert.ok(words.length >= 2, JSON.stringify(words));
assert.strictEqual(new Date(Date.UTC(2024, 6, 1, 12)).toLocaleString('en-US', { timeZone: 'America/New_York', hour: 'numeric' }), '8 AM');
console.log(new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(1234.5));
console.log('CORPUS-OK builtin_intl');
