# A bar and line chart rendered to PNG in memory and returned as base64, as a code node hands it to an LLM.
import base64
import io

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun']
revenue = [12.5, 14.1, 13.8, 17.2, 19.9, 21.4]
fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
ax.bar(months, revenue, color='#4c72b0', label='revenue')
ax.plot(months, revenue, color='#dd8452', marker='o', label='trend')
ax.set_title('Revenue by month (k$)')
ax.legend()
buf = io.BytesIO()
fig.savefig(buf, format='png')
plt.close(fig)
png = buf.getvalue()
assert png[:8] == b'\x89PNG\r\n\x1a\n', png[:8]
width, height = int.from_bytes(png[16:20], 'big'), int.from_bytes(png[20:24], 'big')
assert (width, height) == (600, 400), (width, height)
encoded = base64.b64encode(png).decode()
assert base64.b64decode(encoded) == png and len(encoded) > 4000, len(encoded)
print(f'chart {width}x{height} base64 {len(encoded) > 4000}')
print('CORPUS-OK matplotlib_chart')
