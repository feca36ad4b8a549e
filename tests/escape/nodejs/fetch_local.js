// expect-result: ok
// attack: fetch("http://127.0.0.1:1") without network
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
fetch('http://127.0.0.1:1/').then((r) => console.log(MARK, 'response', r.status))
  .catch((e) => console.log('failed as it must:', e.cause ? e.cause.code : e.message));
