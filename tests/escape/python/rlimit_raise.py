# expect-result: ok|seccomp
# attack: raise the hard limits of NOFILE, NPROC, CPU and FSIZE (only possible with CAP_SYS_RESOURCE)
import os, sys
MARK = 'DIFYSANDBOX-' + 'ESCAPED'

import resource
raised = []
for name in ('RLIMIT_NOFILE', 'RLIMIT_NPROC', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_AS'):
    res = getattr(resource, name)
    soft, hard = resource.getrlimit(res)
    print(name, soft, hard)
    if hard == resource.RLIM_INFINITY:
        continue
    try:
        print('calling', flush=True)
        resource.setrlimit(res, (hard * 4, hard * 4))
        raised.append(name)
    except (ValueError, OSError) as e:
        print('  raise denied:', e)
if raised:
    print(MARK, 'raised hard limits:', raised)
