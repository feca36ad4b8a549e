#!/usr/bin/python3
"""No function in src/ is longer than 80 lines (STYLE.md, issue 15), counted from the line that opens its
body to the line that closes it. The functions that are longer today are listed by name below, each
waiting for its split, and may not grow; the list may only shrink: a listed function that is now short
enough fails the test too, so that its row is removed. Run: tests/lint/check-function-length.py [SRC_DIR]."""

import re
import sys
from pathlib import Path

LIMIT = 80

# file: function, with the length it had when it was listed. Remove a row once the function is split.
LONGER = {
}


NOT_A_HEAD = (' ', '\t', '#', '/', '*', 'typedef', 'struct ', 'enum ', 'union ')


def wrapped_head(lines, i):
    """The line where a function's signature starts when it wraps and line i, indented, opens the body
    ('              sd_bus_error *reterr) {'); None when line i opens no function body."""
    if not lines[i].startswith((' ', '\t')) or not lines[i].endswith(') {'):
        return None
    for k in range(i - 1, max(-1, i - 6), -1):
        line = lines[k]
        if line.endswith((';', '{', '}')) or not line:
            return None
        if not line.startswith((' ', '\t')):
            return k if not line.startswith(NOT_A_HEAD) and '=' not in line and '(' in line else None
    return None


def functions(path):
    """(name, first line, length) of every function definition: a body opened by '{' at the end of a
    line in column 0 code, or at the end of the indented last line of a signature that starts in column 0,
    closed by '}' alone in column 0."""
    lines = path.read_text().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        k = wrapped_head(lines, i)
        if k is not None:
            name = re.search(r'(\w+)\s*\(', re.sub(r'__attribute__\s*\(\(.*?\)\)', '', lines[k]))
            j = i
            while j < len(lines) and lines[j] != '}':
                j += 1
            if name:
                yield name.group(1), i + 1, j - i + 1
            i = j
        elif line.endswith('{') and not line.startswith(NOT_A_HEAD) and '=' not in line and '(' in line:
            head = ' '.join(lines[max(0, i - 3):i + 1])
            m = re.findall(r'(\w+)\s*\(', head)
            j = i
            while j < len(lines) and lines[j] != '}':
                j += 1
            if m:
                yield m[-1] if not m[-1].startswith('__attribute__') else m[0], i + 1, j - i + 1
            i = j
        i += 1


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / 'src')
    failures = []
    found = set()
    for path in sorted(src.rglob('*.c')):
        rel = path.relative_to(src).as_posix()
        for name, line, length in functions(path):
            key = f'{rel}:{name}'
            if length <= LIMIT:
                continue
            found.add(key)
            if key not in LONGER:
                failures.append(f'src/{rel}:{line}: {name}() is {length} lines (at most {LIMIT})')
            elif length > LONGER[key]:
                failures.append(f'src/{rel}:{line}: {name}() grew to {length} lines (listed at {LONGER[key]})')
    for key in sorted(set(LONGER) - found):
        failures.append(f'src/{key}() is listed in LONGER but no longer over {LIMIT} lines: remove its row')
    for f in failures:
        print(f)
    print(f'{len(found)} functions over {LIMIT} lines, all listed' if not failures else
          f'{len(failures)} problem(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
