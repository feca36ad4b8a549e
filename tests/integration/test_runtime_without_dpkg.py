"""Runtime trees built without a package database (issue 17): what an rpm's %post does on Fedora.

difysandbox-prepare-runtime builds the python3 and nodejs trees into a private runtime_dir with a PATH that
has no dpkg-query, so it can only read the interpreters. Then:
- the trees say so (package_source "interpreter" in their metadata);
- on Debian, the python3 tree's file list equals the one built with dpkg's answers, except for the
  differences in ALLOWED, each with its reason and each only with dpkg (its Depends that no metadata or
  import names): what a library imports only when it is installed (requests: simplejson, urllib3:
  brotli, rich: attrs) is in both trees, so they agree whatever else the host has installed;
- the language tests and the escape corpus pass on them (a sub-run of pytest with
  DIFYSANDBOX_RUNTIME_DIR pointing there), and httpx's async client, which needs anyio, works.
The real /var/lib/difysandbox is never touched.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, command, parse_output, sandbox_env

PREPARE_RUNTIME = REPO / 'scripts' / 'difysandbox-prepare-runtime'
METADATA = '.difysandbox-runtime'

# (only in the tree built with dpkg | only in the one built from the interpreter, path pattern, reason)
ALLOWED = [
    ('dpkg', r'/usr/lib/python3\.\d+/dist-packages(/.*)?',
     'a site directory inside the stdlib directory, copied with the stdlib; python3-numpy keeps a second '
     "copy of numpy's core module there, which imports never reach (/usr/lib/python3/dist-packages comes "
     'first on sys.path); without dpkg, site directories hold only the listed distributions'),
]
# Beyond those, a file may be only in the tree built with dpkg when the builder's reason for it is a
# Depends: a package that the Depends of one in the tree names, though no metadata (Requires-Dist) and no
# import does (python3-pygments -> python3-pkg-resources; python3-numexpr -> python3-packaging; Debian
# 13's python3-markdown-it -> python3-linkify-it). Which ones depend on what the host has installed;
# the rule does not.
DEPENDS_ONLY = re.compile(r'Debian package python3-[^:]+: a Depends of python3-\S+')


def build(runtime_dir, language, path, *options):
    p = subprocess.run(['/usr/bin/python3', str(PREPARE_RUNTIME), '--runtime-dir', str(runtime_dir), *options,
                        language], env=dict(os.environ, PATH=path), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, f'difysandbox-prepare-runtime {language} (PATH={path}):\n{p.stdout}'
    return p.stdout


def tree(runtime_dir, language):
    return Path(os.path.realpath(Path(runtime_dir) / language / 'current'))


def metadata(runtime_dir, language):
    return json.loads((tree(runtime_dir, language) / METADATA).read_text())


def file_list(root):
    """Every file and symlink of a tree, as the host path it stands for."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            found.add(os.path.join(dirpath, name)[len(str(root)):])
    found.discard('/' + METADATA)
    found.discard('/' + METADATA + '-reasons')
    return found


@pytest.fixture(scope='module')
def runtime(sandbox_bin):
    base = tempfile.mkdtemp(prefix='difysandbox-nodpkg-')
    os.chmod(base, 0o755)
    # A PATH with no dpkg-query: an empty directory. The builder runs its other tools (ldd, the
    # interpreters) with a fixed PATH of its own, as on any system.
    empty = os.path.join(base, 'empty-bin')
    os.mkdir(empty, 0o755)
    try:
        nodpkg = Path(base) / 'nodpkg'
        for language in ('python3', 'nodejs'):
            build(nodpkg, language, empty)
        yield Path(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_trees_were_built_from_the_interpreters(runtime):
    meta = metadata(runtime / 'nodpkg', 'python3')
    assert meta['package_source'] == 'interpreter', meta
    names = {p['name'] for p in meta['packages'] if p['requested']}
    assert {'requests', 'httpx', 'Jinja2', 'PySocks', 'numpy', 'pandas'} <= names, names
    assert not [p for p in meta['packages'] if p['name'].startswith('python3-')], meta['packages']
    node = tree(runtime / 'nodpkg', 'nodejs')
    assert (node / os.path.realpath('/usr/bin/node').lstrip('/')).is_file()


def test_same_files_as_with_dpkg_except_the_explained(runtime):
    if not shutil.which('dpkg-query'):
        pytest.skip('no dpkg here: nothing to compare with')
    build(runtime / 'dpkg', 'python3', '/usr/sbin:/usr/bin:/sbin:/bin')
    assert metadata(runtime / 'dpkg', 'python3')['package_source'] == 'dpkg'
    with_dpkg = file_list(tree(runtime / 'dpkg', 'python3'))
    without = file_list(tree(runtime / 'nodpkg', 'python3'))
    reasons = json.loads((tree(runtime / 'dpkg', 'python3') / (METADATA + '-reasons')).read_text())

    def reason(path):
        while path not in reasons and path != '/':
            path = os.path.dirname(path)
        return reasons.get(path, '')

    unexplained = []
    for side, paths in (('dpkg', with_dpkg - without), ('interpreter', without - with_dpkg)):
        patterns = [re.compile(p) for s, p, _ in ALLOWED if s == side]
        unexplained += [f'only with {side}: {p} ({reason(p) if side == "dpkg" else "-"})' for p in sorted(paths)
                        if not any(r.fullmatch(p) for r in patterns)
                        and not (side == 'dpkg' and DEPENDS_ONLY.fullmatch(reason(p)))]
    assert not unexplained, f'{len(unexplained)} unexplained differences:\n' + '\n'.join(unexplained[:60])
    # A library that imports another only when it is installed takes it into both trees (requests:
    # simplejson, which TEST_PACKAGES installs), with its reason.
    if os.path.isdir('/usr/lib/python3/dist-packages/simplejson'):
        for files in (with_dpkg, without):
            assert '/usr/lib/python3/dist-packages/simplejson/__init__.py' in files
        assert reason('/usr/lib/python3/dist-packages/simplejson/__init__.py') == \
            'Debian package python3-simplejson: installs simplejson, imported by import requests'
    # Not a superset in disguise: the explained differences stay small next to the tree.
    assert len(with_dpkg ^ without) < len(with_dpkg) // 20, len(with_dpkg ^ without)


def run(runtime_dir, code, language='python3'):
    env = dict(sandbox_env(), DIFYSANDBOX_RUNTIME_DIR=str(runtime_dir))
    p = subprocess.run(command(language), input=code.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=120)
    return parse_output(p.stdout.decode(), p.stderr.decode('utf-8', 'replace'), p.returncode)


def test_runs_use_the_tree_and_httpx_async_works(runtime):
    res = run(runtime / 'nodpkg', '''
import asyncio, json, httpx, anyio
print(json.load(open("/.difysandbox-runtime"))["package_source"])
async def main():
    async with httpx.AsyncClient() as client:
        return type(client).__name__
print(asyncio.run(main()), anyio.run(anyio.sleep, 0))
''')
    assert res['result'] == 'ok' and res['stdout'] == 'interpreter\nAsyncClient None\n', res.show()


def test_language_tests_and_escape_corpus_pass_on_it(runtime):
    env = dict(os.environ, DIFYSANDBOX_RUNTIME_DIR=str(runtime / 'nodpkg'))
    tests = REPO / 'tests' / 'integration'
    p = subprocess.run([sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-rfE',
                        str(tests / 'test_languages.py'), str(tests / 'test_escape.py')],
                       cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=1200)
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ''
    assert p.returncode == 0 and re.search(r'\d+ passed', summary), p.stdout[-8000:]
    assert int(re.search(r'(\d+) passed', summary).group(1)) >= 200, summary
