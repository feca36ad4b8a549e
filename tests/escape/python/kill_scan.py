# expect-result: ok
# attack: kill(pid, 0) for PIDs 1..2000 finds only the run itself (a PID namespace)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

me = os.getpid()
found, denied = [], []
for pid in range(1, 2001):
    try:
        os.kill(pid, 0)
        found.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        denied.append(pid)
print('me', me, 'found', found[:20], 'denied', denied[:20])
if [p for p in found if p != me] or denied:
    print(MARK, 'other processes visible: found', found[:20], 'denied', denied[:20])
