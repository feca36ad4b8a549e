# expect-result: ok
# attack: the environment holds only HOME, LANG, LANGUAGE, LC_*, TZ, JOBLIB_MULTIPROCESSING (no PATH, USER, SSH_*, API_KEY, LD_PRELOAD, the test runner canary)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

allowed = {'HOME', 'LANG', 'LANGUAGE', 'TZ', 'JOBLIB_MULTIPROCESSING'}
names = sorted(os.environ)
print('environment names:', names)
extra = [n for n in names if n not in allowed and not n.startswith('LC_')]
if extra:
    print(MARK, 'unexpected variables:', extra)
