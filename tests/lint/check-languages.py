#!/usr/bin/python3
"""A language is described once, by its descriptor in src/runtime/ (docs/hacking.md, "Adding a language"):
outside src/runtime/ no file names a language's enum value (LANGUAGE_PYTHON3, LANGUAGE_NODEJS, ...).
Code elsewhere reads the descriptor (runtime_get()), loops over the enum up to _LANGUAGE_MAX, or converts
names with language_from_string(); a comparison with one language's value is how "not Python" came to
mean Node. Run: tests/lint/check-languages.py [SRC_DIR]."""

import re
import sys
from pathlib import Path

# LANGUAGE_X not preceded by a letter or '_': so _LANGUAGE_MAX, RUNTIME_LANGUAGE_NAMES and
# STATS_LANGUAGE_UNKNOWN are not language values.
VALUE = re.compile(r'(?<![A-Za-z0-9_])LANGUAGE_[A-Z0-9_]+')


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / 'src')
    failures = []
    for path in sorted(list(src.rglob('*.c')) + list(src.rglob('*.h'))):
        rel = path.relative_to(src).as_posix()
        if rel.startswith('runtime/'):
            continue
        for n, line in enumerate(path.read_text().split('\n'), 1):
            for m in VALUE.finditer(line):
                failures.append(f'src/{rel}:{n}: names {m.group(0)}: read the language\'s descriptor instead')
    for f in failures:
        print(f)
    print('no language is named outside src/runtime/' if not failures else f'{len(failures)} problem(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
