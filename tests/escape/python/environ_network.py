# expect-result: ok
# options: --network
# attack: with --network the environment may add proxy variables, nothing else
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

allowed = {'HOME', 'LANG', 'LANGUAGE', 'TZ', 'JOBLIB_MULTIPROCESSING', 'http_proxy', 'https_proxy', 'all_proxy', 'no_proxy',
           'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY'}
names = sorted(os.environ)
print('environment names:', names)
extra = [n for n in names if n not in allowed and not n.startswith('LC_')]
if extra:
    print(MARK, 'unexpected variables:', extra)
