// corpus: npm dayjs@1.11.13 date-fns@3.6.0 moment@2.30.1
// dayjs (with its utc and timezone plugins), date-fns and moment: the date arithmetic of a scheduling flow.
const assert = require('assert');
const dayjs = require('dayjs');
dayjs.extend(require('dayjs/plugin/utc'));
dayjs.extend(require('dayjs/plugin/timezone'));
const { addBusinessDays, differenceInCalendarDays, format, parseISO } = require('date-fns');
const moment = require('moment');
const t = dayjs.utc('2024-01-31T10:00:00Z');
assert.strictEqual(t.add(1, 'month').format('YYYY-MM-DD'), '2024-02-29');
assert.strictEqual(t.tz('Asia/Shanghai').format('HH:mm Z'), '18:00 +08:00');
assert.strictEqual(dayjs('2024-03-10').diff('2024-03-01', 'day'), 9);
assert.strictEqual(format(addBusinessDays(parseISO('2024-03-08'), 1), 'yyyy-MM-dd EEE'), '2024-03-11 Mon');
assert.strictEqual(differenceInCalendarDays(parseISO('2024-12-25'), parseISO('2024-12-01')), 24);
assert.strictEqual(moment.utc('2024-02-28').add(2, 'days').format('YYYY-MM-DD dddd'), '2024-03-01 Friday');
assert.ok(moment('2024-13-45', 'YYYY-MM-DD', true).isValid() === false);
console.log(t.add(1, 'month').format('YYYY-MM-DD'));
console.log('CORPUS-OK dates_dayjs_datefns_moment');
