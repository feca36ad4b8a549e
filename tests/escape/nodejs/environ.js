// expect-result: ok
// attack: process.env holds only HOME, LANG, LANGUAGE, LC_*, TZ (no PATH, USER, SSH_*, API_KEY, LD_PRELOAD, NODE_OPTIONS, the canary)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const allowed = ['HOME', 'LANG', 'LANGUAGE', 'TZ'];
const names = Object.keys(process.env).sort();
console.log('environment names:', names);
const extra = names.filter((n) => !allowed.includes(n) && !n.startsWith('LC_'));
if (extra.length) console.log(MARK, 'unexpected variables:', extra);
