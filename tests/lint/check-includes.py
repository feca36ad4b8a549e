#!/usr/bin/python3
"""The layers of src/ point one way (docs/hacking.md, "Include rules"): each folder includes only its own
headers and those of the folders, or single headers, that RULES allows it. An include that breaks a rule
fails the test unless EXCEPTIONS names it with the reason it is tolerated for now; an exception that no
longer occurs fails too, so that the list only shrinks. Every quoted include must also name an existing
header. Run: tests/lint/check-includes.py [SRC_DIR]."""

import re
import sys
from pathlib import Path

# folder: the folders (or single headers) its files may include besides their own folder.
RULES = {
    'common':  [],                                            # plain helpers: nothing above them
    'enter':   ['common/time-util.h'],                        # links nothing of ours: header-only helpers
    # what each language needs; its syscall rows are written in the sandbox's policy vocabulary (the one
    # header of sandbox/ it may use: sandbox/ in turn knows no language, src/runner/ hands it the rows)
    'runtime': ['common', 'sandbox/seccomp-policy.h'],
    'egress':  ['common'],                                    # the relay process
    'sandbox': ['common', 'egress', 'enter/enter-protocol.h'],  # the isolation chain of one run
    # loads the configuration (struct Config itself is common/config.h) and checks it against the
    # vocabularies it names: allowed_syscalls, egress_allow/egress_deny, proxy.*
    'config':  ['common', 'egress/egress-policy.h', 'egress/egress.h', 'sandbox/seccomp-policy.h'],
    # the worker-runner wire format, shared by both sides and owned by neither; it names languages
    'protocol': ['common', 'runtime'],
    'runner':  ['common', 'config', 'protocol', 'runtime', 'sandbox'],  # prepares and runs runs
    # unprivileged code only: the HTTP API, which asks the runner (admit.h: the longest a run may queue)
    'worker':  ['common', 'config', 'protocol', 'runner/admit.h', 'runtime'],
    'manager': ['common', 'config', 'runtime', 'sandbox/uidpool.h'],  # D-Bus daemon and installer
    'ctl':     ['common', 'config', 'runtime'],               # difysandboxctl, talks D-Bus
    # the difysandbox command: `run` takes the runner's path; `serve` is the root supervisor that stands in
    # for systemd (claims the instance's UID range, forks the runner and one worker per connection)
    'cli':     ['common', 'config', 'protocol', 'runner/admit.h', 'runner/handler.h', 'runner/languages.h',
                'runner/runner.h', 'runtime', 'sandbox/instance.h', 'sandbox/run.h', 'worker'],
}

# (file, include, why it is tolerated today): each is a known break of RULES, to be removed.
EXCEPTIONS = [
]


def allowed(folder, include):
    target = include.split('/')[0]
    return any(rule == target or rule == include for rule in RULES[folder])


def main():
    src = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / 'src')
    failures, seen = [], set()
    for path in sorted(list(src.rglob('*.c')) + list(src.rglob('*.h'))):
        rel = path.relative_to(src).as_posix()
        folder = rel.split('/')[0]
        if folder not in RULES:
            failures.append(f'src/{rel}: folder {folder}/ has no row in RULES (and none in docs/hacking.md)')
            continue
        for n, line in enumerate(path.read_text().split('\n'), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            include = m.group(1)
            local = path.parent / include
            if '/' not in include or local.exists():
                if not local.exists():
                    failures.append(f'src/{rel}:{n}: "{include}" does not exist next to it')
                continue  # the folder's own header
            if not (src / include).exists():
                failures.append(f'src/{rel}:{n}: "{include}" does not exist')
            if include.split('/')[0] == folder or allowed(folder, include):
                continue
            if any(e[0] == rel and e[1] == include for e in EXCEPTIONS):
                seen.add((rel, include))
                continue
            failures.append(f'src/{rel}:{n}: {folder}/ may not include "{include}" (RULES[{folder!r}])')
    for rel, include, _ in EXCEPTIONS:
        if (rel, include) not in seen:
            failures.append(f'EXCEPTIONS names src/{rel} -> "{include}", which no longer occurs: remove it')
    for f in failures:
        print(f)
    print(f'include rules hold ({len(EXCEPTIONS)} known exceptions)' if not failures else
          f'{len(failures)} problem(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
