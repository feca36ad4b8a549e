"""The python3 tree's closure as difysandbox-prepare-runtime computes it without a package database, on a
fake interpreter root: a site directory of made-up distributions that Debian's /usr/bin/python3 is
pointed at (PYTHON_PROBE's test-only search path), so every rule shows on names no real package has.

- Requires-Dist is followed, except requirements behind an extra.
- What importing a listed distribution loads is added, even when its metadata does not name it.
- A name is a distribution or a module it provides (socks -> PySocks).
- A distribution's files are its metadata, its RECORD entries inside its site directory and its
  top-level packages; no bytecode of another interpreter, nothing outside the site directory.
- Package queries are skipped when asked, or when dpkg-query is not on the caller's PATH.
"""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

from conftest import REPO

PREPARE_RUNTIME = REPO / 'scripts' / 'difysandbox-prepare-runtime'
PYTHON = '/usr/bin/python3'
TAG = sys.implementation.cache_tag


def load_builder():
    loader = importlib.machinery.SourceFileLoader('prepare_runtime', str(PREPARE_RUNTIME))
    spec = importlib.util.spec_from_loader('prepare_runtime', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


pr = load_builder()


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.fixture(scope='module')
def site():
    with tempfile.TemporaryDirectory(prefix='difysandbox-fake-site-') as d:
        root = Path(os.path.realpath(d))
        write(root, {
            # alpha: a wheel install (RECORD), needs beta, gamma only for an extra; imports delta_mod.
            'alpha-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\n'
                                            'Requires-Dist: beta (>=2)\n'
                                            'Requires-Dist: gamma ; extra == "fancy"\n'
                                            'Requires-Dist: missing-thing ; python_version < "3"\n',
            'alpha-1.0.dist-info/RECORD': 'alpha/__init__.py,,\nalpha/core.py,,\n'
                                          f'alpha/__pycache__/core.{TAG}.pyc,,\n../../bin/alpha,,\n'
                                          'alpha-1.0.dist-info/METADATA,,\n',
            'alpha/__init__.py': 'import delta_mod\n',
            'alpha/core.py': 'X = 1\n',
            f'alpha/__pycache__/core.{TAG}.pyc': '',
            'alpha/__pycache__/core.cpython-99.pyc': '',
            'alpha/data/table.txt': 'data\n',
            # beta: a single-module distribution.
            'beta-2.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: beta\nVersion: 2.0\n',
            'beta-2.0.dist-info/top_level.txt': 'beta\n',
            'beta.py': 'B = 2\n',
            # gamma: installed, but only an extra of alpha wants it.
            'gamma-3.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: gamma\nVersion: 3.0\n',
            'gamma-3.0.dist-info/top_level.txt': 'gamma\n',
            'gamma.py': '',
            # delta: an egg-info (as Debian's) whose module alpha imports, named by nobody's metadata.
            'delta-4.0.egg-info/PKG-INFO': 'Metadata-Version: 1.2\nName: delta\nVersion: 4.0\n',
            'delta-4.0.egg-info/top_level.txt': 'delta_mod\n',
            'delta_mod/__init__.py': '',
            # SockLib provides the module socks2: listed by its module name.
            'SockLib-1.7.egg-info/PKG-INFO': 'Metadata-Version: 1.2\nName: SockLib\nVersion: 1.7\n',
            'SockLib-1.7.egg-info/top_level.txt': 'socks2\n',
            'socks2.py': '',
            # Kappa.Ext and python-lam: dist-info as Debian 13 installs it, with neither RECORD nor
            # top_level.txt; their modules bear the distribution's name (kappa_ext; lam without python-;
            # mu_it without -py, as markdown-it-py's markdown_it).
            'Kappa.Ext-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: Kappa.Ext\nVersion: 1.0\n'
                                                'Requires-Dist: python-lam\n',
            'kappa_ext/__init__.py': 'from kappa_ext import sub\n',
            'kappa_ext/sub.py': '',
            'python_lam-2.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: python-lam\nVersion: 2.0\n'
                                                 'Requires-Dist: mu-it-py\n',
            'lam.py': '',
            'mu_it_py-3.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: mu-it-py\nVersion: 3.0\n',
            'mu_it/__init__.py': '',
            # zeta: installed and unrelated.
            'zeta-0.1.dist-info/METADATA': 'Metadata-Version: 2.1\nName: zeta\nVersion: 0.1\n',
            'zeta-0.1.dist-info/top_level.txt': 'zeta\n',
            'zeta.py': '',
        })
        yield root


def probe(site, names, trace_imports=True):
    info = pr.query_python(PYTHON, names, trace_imports=trace_imports, search_path=[str(site)])
    return {d['name']: d for d in info['distributions']}, info


def test_closure_follows_requirements_and_imports_but_not_extras(site):
    dists, info = probe(site, ['alpha', 'socks2'])
    assert set(dists) == {'alpha', 'beta', 'delta', 'SockLib'}, dists.keys()
    assert {n for n, d in dists.items() if d['requested']} == {'alpha', 'SockLib'}
    assert {d['site'] for d in dists.values()} == {str(site)}


def test_imports_are_what_finds_a_dependency_the_metadata_does_not_name(site):
    dists, _ = probe(site, ['alpha'], trace_imports=False)
    assert set(dists) == {'alpha', 'beta'}


def test_files_are_metadata_record_and_top_level_packages_only(site):
    dists, _ = probe(site, ['alpha', 'socks2'])
    rel = lambda d: sorted(os.path.relpath(f, site) for f in dists[d]['files'])
    assert rel('alpha') == ['alpha-1.0.dist-info/METADATA', 'alpha-1.0.dist-info/RECORD',
                            'alpha/__init__.py', 'alpha/core.py', 'alpha/data/table.txt']
    assert rel('beta') == ['beta-2.0.dist-info/METADATA', 'beta-2.0.dist-info/top_level.txt', 'beta.py']
    assert rel('SockLib') == ['SockLib-1.7.egg-info/PKG-INFO', 'SockLib-1.7.egg-info/top_level.txt',
                              'socks2.py']
    assert rel('delta') == ['delta-4.0.egg-info/PKG-INFO', 'delta-4.0.egg-info/top_level.txt',
                            'delta_mod/__init__.py']


@pytest.mark.parametrize('trace_imports', [True, False])
def test_a_dist_info_without_record_or_top_level_still_brings_its_module(site, trace_imports):
    dists, info = probe(site, ['Kappa.Ext'], trace_imports=trace_imports)
    assert set(dists) == {'Kappa.Ext', 'python-lam', 'mu-it-py'}, (dists.keys(), info['warnings'])
    rel = lambda d: sorted(os.path.relpath(f, site) for f in dists[d]['files'])
    assert rel('Kappa.Ext') == ['Kappa.Ext-1.0.dist-info/METADATA', 'kappa_ext/__init__.py', 'kappa_ext/sub.py']
    assert rel('python-lam') == ['lam.py', 'python_lam-2.0.dist-info/METADATA']
    assert rel('mu-it-py') == ['mu_it/__init__.py', 'mu_it_py-3.0.dist-info/METADATA']
    assert not info['warnings'], info['warnings']


def test_bytecode_of_this_interpreter_only(site):
    found = pr.pyc_files([str(site / 'alpha' / 'core.py'), str(site / 'alpha' / 'data' / 'table.txt')], TAG)
    assert [os.path.relpath(f, site) for f in found] == [f'alpha/__pycache__/core.{TAG}.pyc']


def test_unknown_name_stops_the_build(site):
    with pytest.raises(pr.BuildError, match='no-such-dist: no distribution or module'):
        probe(site, ['alpha', 'no-such-dist'])


def test_interpreter_paths_are_reported(site):
    _, info = probe(site, [])
    assert os.path.isdir(info['stdlib']) and info['cache_tag'] == TAG
    assert info['cafiles'] and info['tzpath'] and info['sites']


def test_package_lists(tmp_path):
    f = tmp_path / 'list.txt'
    f.write_text('# comment\nrequests\nsocks  # PySocks\nrequests\n')
    assert pr.read_packages_file(str(f)) == (['requests', 'socks'], False)
    f.write_text('python3-requests\npython3-socks\n')
    assert pr.read_packages_file(str(f)) == (['python3-requests', 'python3-socks'], True)
    assert pr.python_name('python3-socks') == 'socks'
    f.write_text('python3-requests\nhttpx\n')
    with pytest.raises(pr.BuildError, match='mixes Debian package names'):
        pr.read_packages_file(str(f))
    # The shipped list names distributions and modules, not Debian packages.
    names, debian = pr.read_packages_file(str(REPO / 'dependencies' / 'python3-packages.txt'))
    # numpy and pandas are optional ('?'): a plain install does not pull them (issue 14).
    assert not debian and {'requests', 'httpx', 'jinja2', 'socks', '?numpy', '?pandas'} <= set(names)


def shim_dir(tmp_path):
    """A PATH directory whose dpkg and dpkg-query only record that they were called, and fail."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'calls'
    for tool in ('dpkg', 'dpkg-query'):
        p = bin_dir / tool
        p.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\nexit 1\n')
        p.chmod(0o755)
    return bin_dir, log


def test_package_queries_follow_path_option_and_environment(tmp_path, monkeypatch):
    bin_dir, log = shim_dir(tmp_path)
    args = types.SimpleNamespace(no_package_queries=False)
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    monkeypatch.delenv(pr.NO_QUERIES_ENV, raising=False)
    assert pr.use_package_queries(args, PYTHON) is False  # no dpkg-query on PATH
    monkeypatch.setenv('PATH', str(bin_dir))
    assert pr.use_package_queries(args, PYTHON) is False  # it does not own the interpreter
    assert log.read_text().startswith('dpkg-query -S '), 'the dpkg-query of PATH was not the one asked'
    log.unlink()
    monkeypatch.setenv(pr.NO_QUERIES_ENV, '1')
    assert pr.use_package_queries(args, PYTHON) is False
    monkeypatch.delenv(pr.NO_QUERIES_ENV)
    assert pr.use_package_queries(types.SimpleNamespace(no_package_queries=True), PYTHON) is False
    assert not log.exists(), 'dpkg-query was asked although queries were turned off'


def test_no_package_queries_build_never_runs_dpkg(tmp_path):
    bin_dir, log = shim_dir(tmp_path)
    runtime = tmp_path / 'runtime'
    runtime.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    env = dict(os.environ, PATH=f'{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin')
    p = subprocess.run([PYTHON, str(PREPARE_RUNTIME), '--runtime-dir', str(runtime), '--no-package-queries',
                        'python3'], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout
    assert not log.exists(), f'dpkg was run: {log.read_text()}'
    assert 'Python distributions' in p.stdout, p.stdout


def test_output_of_imports_cannot_garble_the_answer(site, tmp_path):
    noisy = tmp_path / 'noisy'
    write(noisy, {'noisy-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: noisy\nVersion: 1.0\n',
                  'noisy-1.0.dist-info/top_level.txt': 'noisy\n',
                  'noisy.py': 'import os\nprint("{not json", end="")\nos.write(1, b"raw")\n'})
    info = pr.query_python(PYTHON, ['noisy'], search_path=[str(noisy)])
    assert [d['name'] for d in info['distributions']] == ['noisy']


DEBIAN_LIST = 'python3-requests\npython3-httpx\npython3-jinja2\npython3-socks\npython3-numpy\npython3-pandas\n'


def build_tree(tmp_path, name, *options, path='/usr/sbin:/usr/bin:/sbin:/bin'):
    runtime = tmp_path / name
    runtime.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    p = subprocess.run([PYTHON, str(PREPARE_RUNTIME), '--runtime-dir', str(runtime), *options, 'python3'],
                       env=dict(os.environ, PATH=path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    root = os.path.realpath(runtime / 'python3' / 'current')
    files = set()
    for dirpath, dirnames, filenames in os.walk(root):
        files.update(os.path.join(dirpath, n)[len(root):] for n in dirnames + filenames)
    with open(os.path.join(root, '.difysandbox-runtime')) as f:
        meta = json.load(f)
    return p.stdout, files, meta


def test_deprecated_debian_list_still_works_without_dpkg(tmp_path):
    old = tmp_path / 'python3-debian-packages.txt'
    old.write_text(DEBIAN_LIST)
    out, _, meta = build_tree(tmp_path, 'rt', '--packages-file', str(old), '--no-package-queries')
    assert 'names Debian packages, which is deprecated' in out, out
    assert meta['package_source'] == 'interpreter'
    assert {'requests', 'httpx', 'Jinja2', 'PySocks', 'numpy', 'pandas'} <= \
        {p['name'] for p in meta['packages'] if p['requested']}, meta['packages']


def test_with_dpkg_the_new_list_gives_the_tree_the_debian_list_gave(tmp_path):
    """Debian behaviour unchanged: dpkg resolves the distributions to the packages the old list named
    (and anyio's, which python3-httpcore depends on anyway), so the trees are the same."""
    if not shutil.which('dpkg-query'):
        pytest.skip('no dpkg here')
    old = tmp_path / 'python3-debian-packages.txt'
    old.write_text(DEBIAN_LIST)
    _, old_files, old_meta = build_tree(tmp_path, 'old', '--packages-file', str(old))
    _, new_files, new_meta = build_tree(tmp_path, 'new')
    assert old_meta['package_source'] == new_meta['package_source'] == 'dpkg'
    names = lambda meta: sorted(p['name'] for p in meta['packages'])
    assert names(old_meta) == names(new_meta)
    assert old_files == new_files, sorted(old_files ^ new_files)[:40]


def test_probe_writes_no_bytecode_into_the_site(tmp_path):
    fresh = tmp_path / 'fresh'
    write(fresh, {'fresh-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\nName: fresh\nVersion: 1.0\n',
                  'fresh-1.0.dist-info/top_level.txt': 'fresh\n',
                  'fresh/__init__.py': 'from . import sub\n', 'fresh/sub.py': ''})
    pr.query_python(PYTHON, ['fresh'], search_path=[str(fresh)])
    assert not list(fresh.rglob('__pycache__')), 'importing wrote bytecode next to the sources'
