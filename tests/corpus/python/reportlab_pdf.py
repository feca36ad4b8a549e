# ReportLab: an invoice PDF with text and a table drawn in memory; pypdf reads its text back.
import io

from pypdf import PdfReader
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle
from reportlab.lib.styles import getSampleStyleSheet

buf = io.BytesIO()
doc = SimpleDocTemplate(buf, pagesize=A4, title='Invoice')
styles = getSampleStyleSheet()
table = Table([['item', 'qty', 'price'], ['tea', '2', '3.50'], ['cake', '1', '4.80']])
table.setStyle(TableStyle([('GRID', (0, 0), (-1, -1), 0.5, colors.grey)]))
doc.build([Paragraph('Invoice 2024-001', styles['Title']), table])
pdf = buf.getvalue()
assert pdf.startswith(b'%PDF-')
text = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
assert 'Invoice 2024-001' in text and 'cake' in text, text
print('pdf bytes', len(pdf) > 1000)
print('CORPUS-OK reportlab_pdf')
