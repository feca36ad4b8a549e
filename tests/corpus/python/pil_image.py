# Pillow: draw a badge with text, resize, convert, and encode as PNG and JPEG in memory.
import io

from PIL import Image, ImageDraw, ImageFilter, ImageFont

img = Image.new('RGB', (200, 100), 'white')
draw = ImageDraw.Draw(img)
draw.rectangle([10, 10, 190, 90], outline='navy', width=3, fill=(230, 240, 255))
draw.text((30, 40), 'Dify 42', fill='black', font=ImageFont.load_default())
assert img.getpixel((10, 50)) == (0, 0, 128)
thumb = img.resize((100, 50)).filter(ImageFilter.GaussianBlur(1))
gray = thumb.convert('L')
png, jpg = io.BytesIO(), io.BytesIO()
gray.save(png, format='PNG')
img.save(jpg, format='JPEG', quality=80)
back = Image.open(io.BytesIO(png.getvalue()))
assert back.size == (100, 50) and back.mode == 'L'
assert jpg.getvalue()[:3] == b'\xff\xd8\xff'
print('thumb', back.size)
print('CORPUS-OK pil_image')
