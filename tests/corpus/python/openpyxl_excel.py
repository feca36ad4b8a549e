# openpyxl: an Excel workbook built in memory with a formula and a style, then read back.
import io

from openpyxl import Workbook, load_workbook
from openpyxl.styles import Font

wb = Workbook()
ws = wb.active
ws.title = 'Sales'
ws.append(['item', 'qty', 'price'])
for row in [('apple', 3, 1.5), ('pear', 5, 2.0), ('plum', 2, 3.25)]:
    ws.append(row)
ws['D1'] = 'total'
for r in range(2, 5):
    ws[f'D{r}'] = f'=B{r}*C{r}'
ws['A1'].font = Font(bold=True)
buf = io.BytesIO()
wb.save(buf)
back = load_workbook(io.BytesIO(buf.getvalue()))
sheet = back['Sales']
assert sheet['A4'].value == 'plum' and sheet['C4'].value == 3.25
assert sheet['D3'].value == '=B3*C3' and sheet['A1'].font.bold
total = sum(sheet[f'B{r}'].value * sheet[f'C{r}'].value for r in range(2, 5))
assert total == 21.0
print('rows', sheet.max_row, 'total', total)
print('CORPUS-OK openpyxl_excel')
