"""The documentation keeps up with the code: every command-line option, configuration key, environment
override and D-Bus member that exists is in its man page, every man page renders without a warning,
and the operator documentation's links and journal message IDs point at things that exist.

Sources of truth: the programs' --help and their getopt tables (src/cli, src/worker, src/manager,
src/ctl), the key and environment tables of src/config/config-file.c, and the introspection XML
dbus/org.difysandbox.Sandbox1.xml. A page or program that does not exist yet skips its test with what
is missing. Needs no root.
"""

import glob
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import sandbox_binary
from serve_helpers import worker_binary

REPO = Path(__file__).resolve().parents[2]
MAN = REPO / 'man'
SRC = REPO / 'src'
DBUS_XML = REPO / 'dbus' / 'org.difysandbox.Sandbox1.xml'
CONFIG_FILE_C = SRC / 'config' / 'config-file.c'
PREFIX = Path(sandbox_binary()).resolve().parent.parent


# ------------------------------------------------------------------------------------------ helpers

def page_text(page):
    """The scdoc source of man/<page>.scd with scdoc's escapes undone (max\\_workers -> max_workers),
    or a skip naming the missing page."""
    path = MAN / f'{page}.scd'
    if not path.exists():
        pytest.skip(f'man/{page}.scd does not exist yet')
    return re.sub(r'\\([\\_*])', r'\1', path.read_text())


def entries(text):
    """{term line: the entry's whole text} of scdoc definition lists: a line at column 0 that starts
    with '*' and is followed by a tab-indented line opens an entry, which runs over the tab-indented
    and empty lines after it."""
    out, lines = {}, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('*') and i + 1 < len(lines) and lines[i + 1].startswith('\t'):
            body = [line]
            i += 1
            while i < len(lines) and (lines[i].startswith('\t') or not lines[i].strip()):
                body.append(lines[i])
                i += 1
            out[line] = '\n'.join(body)
        else:
            i += 1
    return out


def entry_for(text, term):
    """The entries whose header names *term* in bold."""
    return [body for header, body in entries(text).items() if f'*{term}*' in header]


def getopt_long_options(paths):
    """The long option names of every `struct option` table in these C files."""
    names = set()
    for path in paths:
        names |= set(re.findall(r'\{\s*"([a-z0-9][a-z0-9-]*)"\s*,\s*(?:no|required|optional)_argument',
                                Path(path).read_text()))
    return names


def help_options(argv):
    """The --options that `argv --help` prints, or None when the program is not there."""
    if not os.access(argv[0], os.X_OK):
        return None
    p = subprocess.run([*argv, '--help'], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=30, env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
    assert p.returncode == 0, f'{" ".join(argv)} --help exited {p.returncode}: {p.stderr}'
    return set(re.findall(r'(?<![\w-])--([a-z][a-z0-9-]*)', p.stdout))


def sources_with_main(directory, exclude=()):
    return [p for p in sorted(glob.glob(str(SRC / directory / '*.c')))
            if os.path.basename(p) not in exclude and re.search(r'^int main\(', Path(p).read_text(), re.M)]


# ------------------------------------------------------------------------- programs and their pages

def manager_binary():
    return str(PREFIX / 'libexec' / 'difysandbox-manager')


def ctl_binary():
    return shutil.which('difysandboxctl') or str(PREFIX / 'bin' / 'difysandboxctl')


def libexec_helper(name):
    return str(PREFIX / 'libexec' / 'difysandbox' / name)


# page, how to get --help (list of argv), sources, verbs the page must describe.
PROGRAMS = {
    'difysandbox.8': (lambda: [[sandbox_binary()], [sandbox_binary(), 'run'], [sandbox_binary(), 'serve'],
                               [sandbox_binary(), 'check-config']],
                      lambda: [str(SRC / 'cli' / 'difysandbox.c')],
                      ('run', 'serve', 'check-config')),
    'difysandbox-worker.8': (lambda: [[worker_binary()]],
                             lambda: [str(SRC / 'worker' / 'worker-main.c')],
                             ()),
    'difysandbox-runner.8': (lambda: [[str(PREFIX / 'libexec' / 'difysandbox-runner')]],
                             lambda: [str(SRC / 'runner' / 'runner-main.c')],
                             ()),
    'difysandbox-manager.8': (lambda: [[manager_binary()]],
                              lambda: sources_with_main('manager', exclude=('installer-main.c',)),
                              ()),
    'difysandboxctl.1': (lambda: [[ctl_binary()]],
                         lambda: sources_with_main('ctl'),
                         ('status', 'stats', 'deps', 'list', 'install', 'remove', 'refresh', 'reload',
                          'run')),
    'difysandbox-installer.8': (lambda: [[libexec_helper('difysandbox-installer')]],
                                lambda: [str(SRC / 'manager' / 'installer-main.c')],
                                ()),
    # A Python script: its argparse --help is the only table of its options.
    'difysandbox-prepare-runtime.8': (lambda: [[str(REPO / 'scripts' / 'difysandbox-prepare-runtime')]],
                                      lambda: [],
                                      ()),
}


@pytest.mark.parametrize('page', sorted(PROGRAMS))
def test_every_option_is_in_its_man_page(page):
    helps, sources, verbs = PROGRAMS[page]
    text = page_text(page)
    source_files = [s for s in sources() if os.path.exists(s)]
    options = getopt_long_options(source_files)
    # Run --help only where the program's own table says it has one: a daemon without it would start.
    ran = []
    if 'help' in options or not source_files:
        for argv in helps():
            found = help_options(argv)
            if found is not None:
                options |= found
                ran.append(' '.join(argv))
    if not source_files and not ran:
        pytest.skip(f'neither the sources nor the installed program of {page} exist yet')
    assert options, f'no option found for {page} in {source_files} or {ran}'
    missing = sorted(o for o in options if f'*--{o}*' not in text)
    assert not missing, (f'man/{page}.scd does not document ' + ', '.join('--' + o for o in missing) +
                         f' (from {source_files + ran})')
    absent_verbs = [v for v in verbs if not re.search(rf'\*[^*\n]*\b{re.escape(v)}\b[^*\n]*\*', text)]
    assert not absent_verbs, f'man/{page}.scd does not describe the verbs {absent_verbs}'


# ------------------------------------------------------------------------------ configuration keys

def config_tables():
    text = CONFIG_FILE_C.read_text()
    keys_block = re.search(r'static const KeyDef keys\[\] = \{(.*?)\n\};', text, re.S)
    env_block = re.search(r'static const EnvOverride env_overrides\[\] = \{(.*?)\n\};', text, re.S)
    assert keys_block and env_block, f'the key or environment table of {CONFIG_FILE_C} moved'
    keys = re.findall(r'\{\s*"([a-z0-9_.]+)"\s*,\s*(KEY_[A-Z_]+)', keys_block.group(1))
    env = re.findall(r'\{\s*"([A-Z0-9_]+)"\s*,\s*"([a-z0-9_.]+)"', env_block.group(1))
    assert len(keys) > 30 and len(env) > 20, (len(keys), len(env))
    return [k for k, kind in keys if kind != 'KEY_SECTION'], env


def test_every_config_key_is_in_difysandbox_conf_5():
    text = page_text('difysandbox.conf.5')
    keys, _ = config_tables()
    missing = [k for k in keys if not entry_for(text, k)]
    assert not missing, f'man/difysandbox.conf.5.scd has no entry for the keys {missing}'


def test_every_environment_override_is_in_its_key_entry():
    text = page_text('difysandbox.conf.5')
    keys, env = config_tables()
    wrong = []
    for variable, key in env:
        assert key in keys, f'{variable} overrides {key}, which is not in the key table'
        if not any(f'*{variable}*' in body for body in entry_for(text, key)):
            wrong.append(f'{variable} (for {key})')
    assert not wrong, 'man/difysandbox.conf.5.scd does not name these variables in their key\'s entry: ' \
                      + ', '.join(wrong)


# ------------------------------------------------------------------------------------------- D-Bus

def dbus_members():
    """[(interface, kind, name, [(type, name), ...] in, [(type, name), ...] out)] from the XML."""
    members = []
    for iface in ET.parse(DBUS_XML).getroot().iter('interface'):
        for el in iface:
            if el.tag == 'method':
                args = el.findall('arg')
                ins = [(a.get('type'), a.get('name')) for a in args if a.get('direction', 'in') == 'in']
                outs = [(a.get('type'), a.get('name')) for a in args if a.get('direction') == 'out']
                members.append((iface.get('name'), 'method', el.get('name'), ins, outs))
            elif el.tag == 'signal':
                args = [(a.get('type'), a.get('name')) for a in el.findall('arg')]
                members.append((iface.get('name'), 'signal', el.get('name'), args, []))
            elif el.tag == 'property':
                members.append((iface.get('name'), 'property', el.get('name'), [(el.get('type'), None)], []))
    assert members, f'no member in {DBUS_XML}'
    return members


def test_every_dbus_member_is_in_its_man_page_with_its_signature():
    text = page_text('org.difysandbox.Sandbox1.5')
    problems = []
    for iface in sorted({m[0] for m in dbus_members()}):
        if iface not in text:
            problems.append(f'interface {iface} is not named')
    for iface, kind, name, ins, outs in dbus_members():
        headers = [h for h in entries(text) if re.match(rf'\*{name}\*', h)]
        if not headers:
            problems.append(f'{kind} {iface}.{name} has no entry')
            continue
        header = headers[0]
        for typ, arg in ins + outs:
            want = f'_{typ}_' + (f' {arg}' if arg else '')
            if want not in header:
                problems.append(f'{kind} {name}: its entry header {header!r} lacks {want!r}')
    assert not problems, 'man/org.difysandbox.Sandbox1.5.scd:\n' + '\n'.join(problems)


def test_no_dbus_member_is_documented_that_does_not_exist():
    text = page_text('org.difysandbox.Sandbox1.5')
    real = {m[2] for m in dbus_members()}
    documented = {m.group(1) for h in entries(text) for m in [re.match(r'\*([A-Z][A-Za-z0-9]*)\*', h)] if m}
    assert documented, 'no member entry found in the page'
    assert documented <= real, f'documented but not in {DBUS_XML.name}: {sorted(documented - real)}'


# --------------------------------------------------------------------------------- pages and docs

@pytest.mark.parametrize('source', sorted(p.name for p in MAN.glob('*.scd')))
def test_man_page_renders_without_warnings(source, tmp_path):
    scdoc, man = shutil.which('scdoc'), shutil.which('man')
    assert scdoc, 'scdoc is not installed (Debian package scdoc)'
    assert man, 'man is not installed (Debian package man-db)'
    out = tmp_path / source[:-len('.scd')]
    with open(MAN / source, 'rb') as src, open(out, 'wb') as dst:
        p = subprocess.run([scdoc], stdin=src, stdout=dst, stderr=subprocess.PIPE, timeout=30)
    assert p.returncode == 0, f'scdoc refuses {source}: {p.stderr.decode(errors="replace")}'
    p = subprocess.run([man, '--warnings', '-l', str(out)], capture_output=True, text=True, timeout=60,
                       env={'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'MANWIDTH': '100',
                            'LANG': 'C.UTF-8'})
    assert p.returncode == 0 and p.stderr == '', f'man --warnings on {source}:\n{p.stderr}'


def operator_docs():
    return [REPO / 'README.md'] + sorted((REPO / 'docs').glob('*.md'))


def test_readme_starts_with_the_two_commands():
    text = (REPO / 'README.md').read_text()
    commands = re.search(r'```sh\n(.*?)```', text, re.S)
    assert commands, 'README.md has no sh block'
    lines = [line.split('#')[0].strip() for line in commands.group(1).splitlines()]
    assert lines[:2] == ['./scripts/run', './scripts/test'], lines
    for variable in ('CODE_EXECUTION_ENDPOINT', 'CODE_EXECUTION_API_KEY'):
        assert variable in text, f'README.md does not say how to point Dify at it ({variable})'


def github_anchors(markdown):
    """The anchors GitHub gives the headings of a Markdown file."""
    anchors = set()
    for heading in re.findall(r'^#{1,6}\s+(.*?)\s*$', re.sub(r'```.*?```', '', markdown, flags=re.S), re.M):
        slug = re.sub(r'[^\w\- ]', '', heading.replace('`', '').lower()).replace(' ', '-')
        anchors.add(slug)
    return anchors


def test_relative_links_point_at_files_and_headings():
    broken = []
    for doc in operator_docs():
        for target in re.findall(r'\]\(([^)\s]+)\)', doc.read_text()):
            if re.match(r'[a-z]+:', target):
                continue
            file, _, anchor = target.partition('#')
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                broken.append(f'{doc.relative_to(REPO)} -> {target}')
            elif anchor and path.suffix == '.md' and anchor not in github_anchors(path.read_text()):
                broken.append(f'{doc.relative_to(REPO)} -> {target} (no such heading)')
    assert not broken, 'links to files or headings that do not exist:\n' + '\n'.join(broken)


def test_performance_page_is_a_reference_that_links_its_log():
    """Issue 39: docs/performance.md is the current figures, their commands and their bounds, under 300
    lines; the journal of the sittings is docs/performance-log.md, which the page links. Every section with
    a table says when it was measured and on which head."""
    page = (REPO / 'docs' / 'performance.md').read_text()
    assert len(page.splitlines()) <= 300, f'docs/performance.md has {len(page.splitlines())} lines'
    assert '](performance-log.md' in page, 'docs/performance.md does not link docs/performance-log.md'
    assert (REPO / 'docs' / 'performance-log.md').exists()
    for section in re.split(r'^#{2,3} ', page, flags=re.M)[1:]:
        if re.search(r'^\|---', section, re.M):
            title = section.splitlines()[0]
            assert re.search(r'\b20\d\d-\d\d-\d\d\b', section), f'"{title}": a table without its date'
            assert re.search(r'\bhead [0-9a-f]{7,40}\b', section), f'"{title}": a table without its head'


def test_message_ids_in_the_docs_are_the_codes():
    """A MESSAGE_ID an operator is told to query is one the code writes."""
    defined = set()
    for path in SRC.rglob('*.[ch]'):
        defined |= set(re.findall(r'#define\s+MESSAGE_\w+_STR\s+"([0-9a-f]{32})"', path.read_text()))
    assert defined, 'no MESSAGE_*_STR defined in src/'
    quoted = {}
    for doc in operator_docs() + sorted(MAN.glob('*.scd')):
        text = re.sub(r'\\([\\_*])', r'\1', doc.read_text())  # scdoc's escapes
        for mid in re.findall(r'MESSAGE_ID[=:\s*]*([0-9a-f]{32})', text):
            quoted.setdefault(mid, []).append(doc.name)
    assert quoted, 'no MESSAGE_ID quoted anywhere in the docs'
    unknown = {mid: docs for mid, docs in quoted.items() if mid not in defined}
    assert not unknown, f'MESSAGE_IDs that no source defines: {unknown}'


# ------------------------------------------------------------------------- messages for people (issue 14)

def project_version():
    m = re.search(r"^project\([^)]*?version\s*:\s*'([^']+)'", (REPO / 'meson.build').read_text(), re.M | re.S)
    assert m, 'meson.build names no project version'
    return m.group(1)


def failing_cli(env_extra=None, stderr=subprocess.PIPE):
    """`difysandbox run` without --language: an error found before anything is done, as any user."""
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), **(env_extra or {})}
    return subprocess.run([sandbox_binary(), 'run'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=stderr, env=env, timeout=30)


def test_cli_errors_carry_no_priority_prefix_off_the_journal(tmp_path):
    """'<3>' is for journald, which reads it off a stream it owns: a terminal, a pipe or a file gets
    the words alone, and so does a process that inherited JOURNAL_STREAM for another stream."""
    for env in ({}, {'JOURNAL_STREAM': '8:12345'}):
        p = failing_cli(env)
        err = p.stderr.decode()
        assert p.returncode == 1
        assert err.startswith('Missing --language'), (env, err)
        assert not re.search(r'^<\d>', err, re.M), (env, err)


def test_cli_errors_keep_the_priority_on_a_journal_stream(tmp_path):
    """When JOURNAL_STREAM names stderr itself (dev:inode, as systemd sets it) the message is meant for
    the journal: a native record where journald's socket exists, else a '<3>' line on the stream."""
    path = tmp_path / 'stream'
    with open(path, 'wb') as f:
        st = os.fstat(f.fileno())
        p = failing_cli({'JOURNAL_STREAM': f'{st.st_dev}:{st.st_ino}'}, stderr=f)
    assert p.returncode == 1
    err = path.read_text()
    if os.path.exists('/run/systemd/journal/socket'):
        assert err == '', f'sent to journald, not written: {err!r}'
    else:
        assert err.startswith('<3>Missing --language'), err


def version_commands():
    return [
        ('difysandbox', [sandbox_binary(), '--version']),
        ('difysandboxctl', [ctl_binary(), '--version']),
        ('difysandbox-manager', [manager_binary(), '--version']),
        ('difysandbox-worker', [worker_binary(), '--version']),
        ('difysandbox-runner', [str(PREFIX / 'libexec' / 'difysandbox-runner'), '--version']),
        ('difysandbox-installer', [libexec_helper('difysandbox-installer'), '--version']),
        ('difysandbox-prepare-runtime', [libexec_helper('difysandbox-prepare-runtime'), '--version']),
    ]


@pytest.mark.parametrize('name, argv', version_commands(), ids=[n for n, _ in version_commands()])
def test_every_command_prints_its_version(name, argv):
    assert os.access(argv[0], os.X_OK), f'{argv[0]} is not installed'
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert (p.returncode, p.stdout, p.stderr) == (0, f'{name} {project_version()}\n', '')


def test_run_as_non_root_says_root_is_needed():
    """Not "step 'packages': Operation not permitted", which names a symptom: the cause, first."""
    p = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--',
                        sandbox_binary(), 'run', '--language', 'python3', '-'], input=b'print(1)\n',
                       capture_output=True, env={'PATH': '/usr/bin:/bin'}, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 1 and p.stdout == b''
    assert 'must run as root' in err, err
    assert 'step' not in err and 'Operation not permitted' not in err, err


# ------------------------------------------------------------------------ man pages as systemd's (issue 14)

def see_also(text):
    m = re.search(r'^# SEE ALSO\n(.*?)(?=^# |\Z)', text, re.M | re.S)
    return m.group(1) if m else None


def page_refs(text):
    """The pages a text names the man way, *name*(section)."""
    return set(re.findall(r'\*([A-Za-z0-9_.:-]+)\*\((\d)\)', text))


def our_pages():
    return {tuple(p.name[:-len('.scd')].rsplit('.', 1)) for p in MAN.glob('*.scd')}


@pytest.mark.parametrize('source', sorted(p.name for p in MAN.glob('*.scd')))
def test_see_also_lists_every_related_page(source):
    """As systemd's pages do: SEE ALSO names every page of ours the text refers to, the overview
    difysandbox(8), and every page of ours that lists this one (related is mutual)."""
    text = page_text(source[:-len('.scd')])
    me = tuple(source[:-len('.scd')].rsplit('.', 1))
    listed = see_also(text)
    assert listed is not None, f'{source} has no SEE ALSO'
    listed = page_refs(listed)
    body = (page_refs(text.replace(see_also(text), '')) & our_pages()) - {me}
    missing = body - listed
    assert not missing, f'{source} refers to {sorted(missing)} but does not list them in SEE ALSO'
    if me != ('difysandbox', '8'):
        assert ('difysandbox', '8') in listed, f'{source}: SEE ALSO lacks the overview difysandbox(8)'
    back = {other for other in our_pages() - {me}
            if me in page_refs(see_also(page_text('.'.join(other))) or '')}
    assert not back - listed, f'{source} is listed by {sorted(back - listed)} but does not list them'


def man_sections(text):
    """{section name: its text} of an scdoc page; a '# ' line inside a ``` block is no heading."""
    sections, name, fenced = {}, None, False
    for line in text.splitlines():
        if line.startswith('```'):
            fenced = not fenced
        if not fenced and line.startswith('# '):
            name = line[2:].strip()
            sections[name] = ''
        elif name:
            sections[name] += line + '\n'
    return sections


def test_difysandbox_8_has_environment_and_examples():
    text = page_text('difysandbox.8')
    sections = man_sections(text)
    for name in ('ENVIRONMENT', 'EXAMPLES'):
        assert name in sections, f'difysandbox(8) has no {name}'
    env = sections['ENVIRONMENT']
    # every variable the program reads itself, and the way to the configuration's overrides
    for variable in ('JOURNAL_STREAM', 'API_KEY'):
        assert variable in env, f'ENVIRONMENT does not mention {variable}'
    assert '*difysandbox.conf*(5)' in env
    examples = sections['EXAMPLES']
    commands = re.findall(r'^# (difysandbox .*)$', examples, re.M) + \
        re.findall(r'\| (difysandbox .*)$', examples, re.M)
    for verb in ('run', 'serve', 'check-config'):
        assert any(re.search(rf'\b{verb}\b', c) for c in commands), f'no EXAMPLE runs {verb}'
    assert '*--version*' in text


def installed_pages():
    pages = []
    for source in sorted(MAN.glob('*.scd')):
        page = source.name[:-len('.scd')]
        pages.append(PREFIX / 'share' / 'man' / f'man{page.rsplit(".", 1)[1]}' / page)
    return pages


@pytest.mark.parametrize('installed', installed_pages(), ids=lambda p: p.name)
def test_man_page_footer_carries_the_version(installed):
    """.TH "name" "section" "date" "difysandbox VERSION" "difysandbox manual", as systemd's "systemd 252"."""
    source = MAN / f'{installed.name}.scd'
    first = source.read_text().splitlines()[0]
    assert re.fullmatch(r'\S+\(\d\) "difysandbox @VERSION@" "difysandbox manual"', first), first
    assert installed.exists(), f'{installed} is not installed'
    th = next(line for line in installed.read_text().splitlines() if line.startswith('.TH '))
    fields = re.findall(r'"([^"]*)"', th)
    assert fields[3:] == [f'difysandbox {project_version()}', 'difysandbox manual'], th


def test_conf_5_says_which_keys_need_the_trees_rebuilt():
    text = page_text('difysandbox.conf.5')
    m = re.search(r'^## Keys that need the runtime trees rebuilt\n(.*?)^##? ', text, re.M | re.S)
    assert m, 'difysandbox.conf(5) has no section on keys that need the runtime trees rebuilt'
    section = m.group(1)
    named = set(re.findall(r'^\*([a-z_.]+)\*', section, re.M)) | \
        set(re.findall(r'^\*[a-z_.]+\*, \*([a-z_.]+)\*', section, re.M))
    assert {'uid_min', 'uid_max'} <= named, named
    keys, _ = config_tables()
    assert named <= set(keys), f'not configuration keys: {named - set(keys)}'
    assert 'difysandbox-prepare-runtime' in section and 'difysandboxctl reload' in section
    # and the key's own entry points there
    assert any('runtime trees rebuilt' in e for e in entry_for(text, 'uid_min'))
