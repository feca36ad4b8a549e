# odfpy: an OpenDocument spreadsheet written to memory and read back.
import io

from odf.opendocument import OpenDocumentSpreadsheet, load
from odf.table import Table, TableCell, TableRow
from odf.text import P

doc = OpenDocumentSpreadsheet()
table = Table(name='Budget')
for label, value in [('rent', 1200), ('food', 450)]:
    row = TableRow()
    c1 = TableCell(valuetype='string')
    c1.addElement(P(text=label))
    c2 = TableCell(valuetype='float', value=value)
    c2.addElement(P(text=str(value)))
    row.addElement(c1)
    row.addElement(c2)
    table.addElement(row)
doc.spreadsheet.addElement(table)
buf = io.BytesIO()
doc.write(buf)
back = load(io.BytesIO(buf.getvalue()))
tables = back.spreadsheet.getElementsByType(Table)
assert tables[0].getAttribute('name') == 'Budget'
values = [float(c.getAttribute('value')) for c in tables[0].getElementsByType(TableCell) if c.getAttribute('value')]
assert values == [1200.0, 450.0], values
print('total', sum(values))
print('CORPUS-OK odf_spreadsheet')
