# shutil.copy2 and copytree keep metadata (they read extended attributes): a report copied in /tmp.
import os
import shutil

os.makedirs('/tmp/reports/2024', exist_ok=True)
with open('/tmp/reports/2024/q1.csv', 'w') as f:
    f.write('region,total\nnorth,42\n')
os.utime('/tmp/reports/2024/q1.csv', (1700000000, 1700000000))
shutil.copy2('/tmp/reports/2024/q1.csv', '/tmp/q1-copy.csv')
assert os.stat('/tmp/q1-copy.csv').st_mtime == 1700000000
assert open('/tmp/q1-copy.csv').read() == 'region,total\nnorth,42\n'
shutil.copytree('/tmp/reports', '/tmp/reports-backup')
assert os.listdir('/tmp/reports-backup/2024') == ['q1.csv']
shutil.make_archive('/tmp/reports', 'zip', '/tmp/reports')
assert os.path.getsize('/tmp/reports.zip') > 100
shutil.rmtree('/tmp/reports-backup')
print('copied', os.stat('/tmp/q1-copy.csv').st_size)
print('CORPUS-OK shutil_copy2')
