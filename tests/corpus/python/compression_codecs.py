# Compression: zlib, gzip, bz2, lzma from the standard library, and lz4, zstandard and brotli.
import bz2
import gzip
import lzma
import zlib

import brotli
import lz4.frame
import zstandard

data = ('{"event": "page_view", "user": 12345}\n' * 2000).encode()
for name, comp, decomp in [
    ('zlib', zlib.compress, zlib.decompress),
    ('gzip', gzip.compress, gzip.decompress),
    ('bz2', bz2.compress, bz2.decompress),
    ('lzma', lzma.compress, lzma.decompress),
    ('lz4', lz4.frame.compress, lz4.frame.decompress),
    ('zstd', zstandard.ZstdCompressor(level=3).compress, zstandard.ZstdDecompressor().decompress),
    ('brotli', brotli.compress, brotli.decompress),
]:
    packed = comp(data)
    assert decomp(packed) == data, name
    assert len(packed) < len(data) // 20, (name, len(packed))
print('codecs 7')
print('CORPUS-OK compression_codecs')
