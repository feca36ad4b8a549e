#!/usr/bin/python3
"""The lint checks can fail: each is run on a small tree of src/ with one break in it and must refuse it,
and on the same tree without the break and must pass. Run: tests/lint/selftest.py."""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / 'src'


def run(script, src):
    return subprocess.run([sys.executable, str(HERE / script), str(src)], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / 'src'
        shutil.copytree(SRC, src)
        for script in ('check-includes.py', 'check-function-length.py', 'check-languages.py'):
            if run(script, src).returncode != 0:
                failures.append(f'{script} refuses the tree as it is')

        # common/ including something above it
        strv = src / 'common' / 'strv.c'
        text = strv.read_text()
        strv.write_text(text.replace('#include "strv.h"', '#include "strv.h"\n#include "sandbox/run.h"'))
        r = run('check-includes.py', src)
        if r.returncode == 0 or 'common/ may not include "sandbox/run.h"' not in r.stdout:
            failures.append('check-includes.py let common/ include sandbox/run.h:\n' + r.stdout)
        # a header that does not exist
        strv.write_text(text.replace('#include "strv.h"', '#include "strv.h"\n#include "common/nothing.h"'))
        if run('check-includes.py', src).returncode == 0:
            failures.append('check-includes.py let a missing header through')
        strv.write_text(text)

        # a function of 81 lines
        body = '\n'.join(f'        (void) {i};' for i in range(79))
        (src / 'common' / 'long.c').write_text(f'void long_function(void);\nvoid long_function(void) {{\n{body}\n}}\n')
        r = run('check-function-length.py', src)
        if r.returncode == 0 or 'long_function() is 81 lines' not in r.stdout:
            failures.append('check-function-length.py let an 81-line function through:\n' + r.stdout)
        body = '\n'.join(f'        (void) {i};' for i in range(78))
        (src / 'common' / 'long.c').write_text(f'void long_function(void);\nvoid long_function(void) {{\n{body}\n}}\n')
        if run('check-function-length.py', src).returncode != 0:
            failures.append('check-function-length.py refused an 80-line function')

        # a branch on one language outside src/runtime/
        pool = src / 'runner' / 'pool.c'
        text = pool.read_text()
        pool.write_text(text + '\nint pool_is_python(Language l);\nint pool_is_python(Language l) {\n'
                        '        return l == LANGUAGE_PYTHON3;\n}\n')
        r = run('check-languages.py', src)
        if r.returncode == 0 or 'runner/pool.c' not in r.stdout or 'LANGUAGE_PYTHON3' not in r.stdout:
            failures.append('check-languages.py let runner/ name LANGUAGE_PYTHON3:\n' + r.stdout)
        pool.write_text(text)
        if run('check-languages.py', src).returncode != 0:
            failures.append('check-languages.py refuses the tree once the branch is gone')

    for f in failures:
        print(f)
    print('the lint checks refuse what they should' if not failures else f'{len(failures)} problem(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
