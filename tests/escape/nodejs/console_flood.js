// expect-result: output-truncated
// attack: console.log 64 MiB in 64 KiB lines; the marker goes to stderr only once the last line was flushed to the pipe
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const line = 'L'.repeat(65535) + '\n';
for (let i = 0; i < 1023; i++) process.stdout.write(line);
process.stdout.write(line, () => console.error(MARK, '64 MiB flushed through the stdout pipe'));
