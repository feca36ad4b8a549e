#!/usr/bin/python3
"""tests/vm/syscalls-rows.py MEASURED - each measured call (tests/vm/syscalls-arm64.sh's output: "LANGUAGE
CALL COUNT SNIPPETS") next to the row the policy has for it on arm64, as a Markdown table for
docs/syscalls-arm64.md, then the calls that have no row there.

The rows are read from the tables' text (src/sandbox/seccomp-policy.c: common_rules[] and never_allow[];
src/runtime/python3.c and nodejs.c: each language's): `{ "name", RULE_..., "reason"[, RULE_ARCH_X86_64] }`.
A row marked RULE_ARCH_X86_64 is not compiled on arm64, so it counts as no row there."""

import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = re.compile(r'\{\s*"([a-z0-9_]+)",\s*(RULE_[A-Z_]+)[^"]*"((?:[^"\\]|\\.)*)"\s*(?:,\s*(RULE_ARCH_[A-Z0-9_]+))?')
NEVER = re.compile(r'\{\s*"([a-z0-9_]+)",\s*"((?:[^"\\]|\\.)*)"')


def rows(path, start=None, end=None):
    with open(os.path.join(TOP, path)) as f:
        text = f.read()
    if start:
        text = text[text.index(start):]
        text = text[:text.index(end)] if end else text
    out = {}
    for m in ROW.finditer(text):
        name, action, reason, arch = m.groups()
        if arch != "RULE_ARCH_X86_64":
            out[name] = (action.replace("RULE_", "").lower(), reason)
    return out


def never_allow():
    with open(os.path.join(TOP, "src/sandbox/seccomp-policy.c")) as f:
        text = f.read()
    text = text[text.index("never_allow[] = {"):]
    text = text[:text.index("};")]
    return {m.group(1): m.group(2) for m in NEVER.finditer(text)}


def main():
    common = rows("src/sandbox/seccomp-policy.c", "common_rules[] = {", "};")
    language = {"python3": rows("src/runtime/python3.c"), "nodejs": rows("src/runtime/nodejs.c")}
    never = never_allow()
    missing = []
    print("| language | call | calls | made by | row on arm64 |")
    print("|---|---|---|---|---|")
    with open(sys.argv[1]) as f:
        for line in f:
            lang, call, count, who = line.split()
            row = language[lang].get(call) or common.get(call)
            if row:
                where = "common" if call not in language[lang] else lang
                text = f"{row[0]} ({where}): {row[1]}"
            elif call in never:
                text = f"never allowed: {never[call]}"
            else:
                text = "**no row**"
                missing.append((lang, call, who))
            print(f"| {lang} | `{call}` | {count} | {who.replace(',', ', ')} | {text} |")
    print()
    for lang, call, who in missing:
        print(f"NO ROW: {lang} {call} ({who})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
