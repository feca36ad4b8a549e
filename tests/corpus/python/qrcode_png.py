# qrcode: a QR code for a payment link, as a PNG image in memory.
import io

import qrcode
from PIL import Image

qr = qrcode.QRCode(version=None, error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=4, border=2)
qr.add_data('https://pay.example.org/invoice/2024-001?amount=19.99')
qr.make(fit=True)
img = qr.make_image(fill_color='black', back_color='white')
buf = io.BytesIO()
img.save(buf)
back = Image.open(io.BytesIO(buf.getvalue()))
side = (qr.modules_count + 2 * 2) * 4
assert back.size == (side, side), (back.size, side)
assert back.convert('L').getpixel((0, 0)) == 255 and back.convert('L').getpixel((8, 8)) == 0
print('version', qr.version, 'side', side)
print('CORPUS-OK qrcode_png')
