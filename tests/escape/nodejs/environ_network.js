// expect-result: ok
// options: --network
// attack: with --network process.env may add proxy variables, nothing else
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const allowed = ['HOME', 'LANG', 'LANGUAGE', 'TZ', 'http_proxy', 'https_proxy', 'all_proxy', 'no_proxy',
  'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY'];
const names = Object.keys(process.env).sort();
console.log('environment names:', names);
const extra = names.filter((n) => !allowed.includes(n) && !n.startsWith('LC_'));
if (extra.length) console.log(MARK, 'unexpected variables:', extra);
