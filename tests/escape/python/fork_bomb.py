# expect-result: refused
# attack: fork bomb bounded to 200 forks, every child exits at once
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

n = 0
print('calling', flush=True)
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        print('fork failed after', n, e)
        break
    if pid == 0:
        os._exit(0)
    n += 1
print('forks', n)
if n > 0:
    print(MARK, n, 'forks succeeded')
