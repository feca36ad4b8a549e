# pypdf: build a PDF with pages and metadata in memory, merge, rotate and read it back.
import io

from pypdf import PdfReader, PdfWriter

w = PdfWriter()
for _ in range(3):
    w.add_blank_page(width=595, height=842)
w.add_metadata({'/Title': 'Invoice 42', '/Author': 'Dify'})
buf = io.BytesIO()
w.write(buf)
r = PdfReader(io.BytesIO(buf.getvalue()))
assert len(r.pages) == 3 and r.metadata.title == 'Invoice 42'
w2 = PdfWriter()
for page in r.pages:
    w2.add_page(page)
w2.pages[0].rotate(90)
out = io.BytesIO()
w2.write(out)
r2 = PdfReader(io.BytesIO(out.getvalue()))
assert len(r2.pages) == 3 and r2.pages[0].get('/Rotate') == 90
assert float(r2.pages[1].mediabox.width) == 595
print('pages', len(r2.pages))
print('CORPUS-OK pypdf_pages')
