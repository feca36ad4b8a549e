# python-docx: a Word document with a heading, a table and a paragraph, saved in memory and read back.
import io

import docx

d = docx.Document()
d.add_heading('Quarterly summary', level=1)
d.add_paragraph('Revenue grew by ').add_run('12%').bold = True
table = d.add_table(rows=1, cols=2)
table.rows[0].cells[0].text, table.rows[0].cells[1].text = 'region', 'sales'
for region, sales in [('north', '120'), ('south', '95')]:
    cells = table.add_row().cells
    cells[0].text, cells[1].text = region, sales
buf = io.BytesIO()
d.save(buf)
back = docx.Document(io.BytesIO(buf.getvalue()))
assert back.paragraphs[0].text == 'Quarterly summary'
assert back.paragraphs[1].text == 'Revenue grew by 12%' and back.paragraphs[1].runs[1].bold
assert [c.text for c in back.tables[0].rows[2].cells] == ['south', '95']
print('paragraphs', len(back.paragraphs))
print('CORPUS-OK docx_document')
