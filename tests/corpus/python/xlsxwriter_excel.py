# XlsxWriter: a workbook with a chart written to memory; the file is a valid zip with the sheet in it.
import io
import zipfile

import xlsxwriter

buf = io.BytesIO()
wb = xlsxwriter.Workbook(buf, {'in_memory': True})
ws = wb.add_worksheet('Data')
bold = wb.add_format({'bold': True})
ws.write_row(0, 0, ['month', 'visits'], bold)
for i, (m, v) in enumerate([('Jan', 120), ('Feb', 180), ('Mar', 150)], start=1):
    ws.write(i, 0, m)
    ws.write_number(i, 1, v)
ws.write_formula(4, 1, '=SUM(B2:B4)')
chart = wb.add_chart({'type': 'column'})
chart.add_series({'categories': '=Data!$A$2:$A$4', 'values': '=Data!$B$2:$B$4'})
ws.insert_chart('D2', chart)
wb.close()
z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
names = z.namelist()
assert 'xl/worksheets/sheet1.xml' in names and any(n.startswith('xl/charts/') for n in names), names
sheet = z.read('xl/worksheets/sheet1.xml').decode()
assert 'SUM(B2:B4)' in sheet
print('parts', len(names))
print('CORPUS-OK xlsxwriter_excel')
