#!/usr/bin/python3
"""docs/syscalls.md is the seccomp policy's tables as an operator reads them: every row of
src/sandbox/seccomp-policy.c, src/runtime/python3.c and src/runtime/nodejs.c with its action, the
architectures it applies to and its reason. This script writes the page from the tables (--write) or
checks that the page is what it would write (the default, a lint test), so the page never drifts from the
policy. Run: tests/lint/check-syscalls-doc.py [--write] [SRC_DIR]."""

import re
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
ROW = re.compile(r'^\s*\{\s*"([a-z0-9_]+)",\s*(RULE_[A-Z_]+),\s*"((?:[^"\\]|\\.)*)"\s*(?:,\s*(RULE_ARCH_[A-Z0-9_]+))?\s*\},')
IOCTL = re.compile(r'^\s*\{\s*([A-Z0-9_]+),\s*"([A-Z0-9_]+)",\s*"((?:[^"\\]|\\.)*)"\s*\},')
NEVER = re.compile(r'^\s*\{\s*"([a-z0-9_]+)",\s*"((?:[^"\\]|\\.)*)",\s*(0|E[A-Z]+)\s*\},')
REFUSAL = re.compile(r'^\s*\{\s*"([a-z0-9_]+)",\s*(E[A-Z]+),\s*(NULL|"(?:[^"\\]|\\.)*")\s*\},')

ACTIONS = {
    'RULE_ALLOW': 'allowed',
    'RULE_STARTUP': 'allowed until the final stage (start-up only)',
    'RULE_THREAD_ONLY': 'allowed for threads only (CLONE_THREAD set, no namespace flag)',
    'RULE_ENOSYS': 'fails with ENOSYS (the filter answers)',
    'RULE_EPERM': 'fails with EPERM (the filter answers)',
    'RULE_NETWORK': 'allowed with network; refused without',
    'RULE_SOCKET': 'TCP and UDP with network; EACCES without',
    'RULE_SOCKET_NETLINK': 'TCP, UDP and NETLINK_ROUTE with network; EACCES without',
    'RULE_IOCTL': 'the requests of the ioctl table only',
    'RULE_PRCTL': 'the options of the prctl table only',
}


def block(text, start):
    i = text.index(start)
    return text[i:text.index('\n};', i)].splitlines()


def unescape(s):
    return s.replace('\\"', '"').replace('\\\\', '\\')


def rows(path, start):
    out = []
    for line in block(path.read_text(), start):
        m = ROW.match(line)
        if m:
            arch = 'x86-64' if m.group(4) == 'RULE_ARCH_X86_64' else 'x86-64, arm64'
            out.append((m.group(1), ACTIONS[m.group(2)], arch, unescape(m.group(3))))
    return out


def cell(s):
    return s.replace('|', '\\|')


def render(src):
    policy = (src / 'sandbox' / 'seccomp-policy.c').read_text()
    out = ['# The system calls of a run, row by row', '',
           'Written by `tests/lint/check-syscalls-doc.py --write` from the policy tables',
           '(`src/sandbox/seccomp-policy.c`, `src/runtime/python3.c`, `src/runtime/nodejs.c`); a lint test',
           'fails when this page and the tables differ. How the rows were measured: the Debian 12 sets in',
           "the project's shared `reference/syscalls.md`, the Debian 13 changes in",
           '[syscalls-trixie.md](syscalls-trixie.md).', '',
           '## How a call is answered', '',
           '- A row allows it (for both architectures unless the row says x86-64: arm64 has only the',
           '  `*at`/`p*` successor, which has its own row), or answers it with its errno in the filter.',
           '- Any other call never executes. The final stage hands it to the run\'s supervisor',
           '  (`SECCOMP_RET_USER_NOTIF`), which names it in the answer\'s `error`, the journal record',
           '  (`SYSCALL=`, `REFUSED_SYSCALLS=`) and the stats (`RefusedCalls`), and answers it as the last',
           '  table says: ENOSYS by default, so that libraries fall back. Before the final stage (ld.so and',
           '  the interpreter\'s start, no user code), the kernel answers ENOSYS itself.',
           '- A call of the never-allow list kills the run (exit code 159, `error: operation not',
           '  permitted` and a line naming it), unless its row says EPERM: creating a process or starting',
           '  a program fails at the user\'s line instead. `clone` with a namespace flag kills too.',
           '- A call of another ABI (x32, i386 through `int 0x80`) is killed by the filter itself.',
           '- What it costs: nothing for an allowed call, and nothing for a run that makes no refused call',
           '  (the listener travels with the ack the enter library sends anyway). A refused call costs a',
           '  round trip to the supervisor: 12-23 us measured on the 2-core CI machine under load',
           '  (2026-12-07, 20 000 `getcpu` against 20 000 `getppid` in one run, `difysandbox run`), against',
           '  1-2 us for an allowed call; the rows allow what ordinary libraries call in their loops.',
           '- `allowed_syscalls` adds names to both stages; never a never-allow name.', '']
    out += ['## Common to both interpreters', '', '| call | action | architectures | reason |',
            '|---|---|---|---|']
    for name, action, arch, reason in rows(src / 'sandbox' / 'seccomp-policy.c',
                                          'static const SyscallRule common_rules[]'):
        out.append(f'| `{name}` | {action} | {arch} | {cell(reason)} |')
    for language, file, table in (('Python 3', 'python3.c', 'static const SyscallRule python3_rules[]'),
                                  ('Node.js', 'nodejs.c', 'static const SyscallRule nodejs_rules[]')):
        out += ['', f'## {language} only', '', '| call | action | architectures | reason |', '|---|---|---|---|']
        for name, action, arch, reason in rows(src / 'runtime' / file, table):
            out.append(f'| `{name}` | {action} | {arch} | {cell(reason)} |')
    out += ['', '## `ioctl` requests', '', '| request | reason |', '|---|---|']
    for line in block(policy, 'static const IoctlRule ioctl_rules[]'):
        m = IOCTL.match(line)
        if m:
            out.append(f'| `{m.group(2)}` | {cell(unescape(m.group(3)))} |')
    out += ['', '## `prctl` options', '', '| option | reason |', '|---|---|']
    for line in block(policy, 'static const PrctlRule prctl_rules[]'):
        m = IOCTL.match(line)
        if m:
            out.append(f'| `{m.group(2)}` | {cell(unescape(m.group(3)))} |')
    out += ['', '## Never allowed', '', 'No configuration allows these.', '', '| call | reason | a run that makes it |',
            '|---|---|---|']
    for line in block(policy, 'static const NeverAllowRule never_allow[]'):
        m = NEVER.match(line)
        if m:
            answer = 'is killed' if m.group(3) == '0' else f'gets {m.group(3)}'
            out.append(f'| `{m.group(1)}` | {cell(unescape(m.group(2)))} | {answer} |')
    out += ['', '## How the supervisor answers other refused calls', '', '| call | errno | why |', '|---|---|---|']
    for line in block(policy, 'refusal_errors[] = {'):
        m = REFUSAL.match(line)
        if m:
            why = unescape(m.group(3)[1:-1]) if m.group(3) != 'NULL' else re.sub(
                r'^.*/\*\s*(.*?)\s*\*/.*$', r'\1', line)
            out.append(f'| `{m.group(1)}` | {m.group(2)} | {cell(why)} |')
    out.append('| any other | ENOSYS | "not here": what libraries take as "fall back", as Docker\'s default profile answers |')
    return '\n'.join(out) + '\n'


def main(argv):
    write = '--write' in argv
    args = [a for a in argv[1:] if a != '--write']
    src = Path(args[0]) if args else TOP / 'src'
    page = src.parent / 'docs' / 'syscalls.md'
    text = render(src)
    if write:
        page.write_text(text)
        return 0
    if not page.exists() or page.read_text() != text:
        print(f'{page} is not what the policy tables say: run tests/lint/check-syscalls-doc.py --write',
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
