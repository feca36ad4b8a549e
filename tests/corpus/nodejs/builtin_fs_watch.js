// fs.watch (inotify): notice a file written into a watched directory, as dev servers and loaders do.
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const dir = fs.mkdtempSync('/tmp/watch-');
const seen = new Set();
const watcher = fs.watch(dir, (event, name) => {
  seen.add(name);
  if (seen.has('report.json')) {
    watcher.close();
    assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(dir, 'report.json'))), { ok: true });
    console.log('saw', [...seen].join(','));
    console.log('CORPUS-OK builtin_fs_watch');
  }
});
setTimeout(() => fs.writeFileSync(path.join(dir, 'report.json'), JSON.stringify({ ok: true })), 20);
setTimeout(() => { throw new Error('no fs.watch event within 3 s'); }, 3000).unref();
