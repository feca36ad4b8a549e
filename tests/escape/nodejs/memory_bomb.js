// expect-result: memory
// attack: allocate and fill up to 2 GiB of Buffers in 64 MiB steps (default limit 512 MiB)
const MARK = 'DIFYSANDBOX-' + 'ESCAPED';
const keep = [];
for (let i = 0; i < 32; i++) keep.push(Buffer.alloc(64 << 20, 1));
console.log(MARK, 'allocated', keep.length * 64, 'MiB');
