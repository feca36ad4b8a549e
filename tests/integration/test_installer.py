"""difysandbox-installer (src/manager/installer-main.c) run directly, the way the manager runs it: builds a
dependency generation with pip from a PEP 503 index served on 127.0.0.1 (wheels built here), or with npm
from a local tarball (no network), and switches `current` to it.

The binary is $DIFYSANDBOX_INSTALLER, else the installed /usr/local/libexec/difysandbox/difysandbox-installer.
Run with Debian's pytest as root:  /usr/bin/python3 -m pytest -q tests/integration/test_installer.py
"""

import base64
import fcntl
import functools
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

INSTALLED = '/usr/local/libexec/difysandbox/difysandbox-installer'
PYTHON = '/usr/bin/python3'
NPM = shutil.which('npm') or '/usr/bin/npm'
NOBODY = 65534


def installer_binary():
    return os.environ.get('DIFYSANDBOX_INSTALLER') or INSTALLED


@pytest.fixture(scope='module')
def installer():
    path = installer_binary()
    assert os.access(path, os.X_OK), f'no difysandbox-installer at {path} (set DIFYSANDBOX_INSTALLER)'
    return path


@pytest.fixture
def workdir():
    """A directory of its own under /tmp that everyone may enter, so that an unprivileged installer
    reaches what is in it."""
    path = Path(tempfile.mkdtemp(prefix='difysandbox-installer-', dir='/tmp'))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------------------------- a pip index

def _record_hash(data):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def build_wheel(directory, name, version, files, requires=()):
    """A pure-Python wheel: files is {path in the wheel: text}."""
    dist_info = f'{name}-{version}.dist-info'
    metadata = f'Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: test package\n'
    metadata += ''.join(f'Requires-Dist: {r}\n' for r in requires)
    contents = dict(files)
    contents[f'{dist_info}/METADATA'] = metadata
    contents[f'{dist_info}/WHEEL'] = ('Wheel-Version: 1.0\nGenerator: difysandbox-test\n'
                                      'Root-Is-Purelib: true\nTag: py3-none-any\n')
    record = ''.join(f'{p},{_record_hash(t.encode())},{len(t.encode())}\n' for p, t in contents.items())
    record += f'{dist_info}/RECORD,,\n'
    contents[f'{dist_info}/RECORD'] = record
    path = Path(directory) / f'{name}-{version}-py3-none-any.whl'
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for p, t in contents.items():
            z.writestr(p, t)
    return path


class _Handler(http.server.SimpleHTTPRequestHandler):
    slow = threading.Event()  # set: requests for /simple/slowpkg/ hang until it is cleared

    def do_GET(self):
        if self.path.startswith('/simple/slowpkg'):
            deadline = time.monotonic() + 60
            while _Handler.slow.is_set() and time.monotonic() < deadline:
                time.sleep(0.1)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def index(tmp_path_factory):
    """A PEP 503 index on 127.0.0.1: tinypkg 1.0 and 2.0 (2.0 needs tinydep), tinydep 1.0, slowpkg 1.0."""
    root = tmp_path_factory.mktemp('index')
    files = root / 'files'
    files.mkdir()
    wheels = {
        'tinypkg': [build_wheel(files, 'tinypkg', '1.0', {'tinypkg/__init__.py': 'VALUE = "one"\n'}),
                    build_wheel(files, 'tinypkg', '2.0', {'tinypkg/__init__.py': 'VALUE = "two"\n'},
                                requires=['tinydep'])],
        'tinydep': [build_wheel(files, 'tinydep', '1.0', {'tinydep/__init__.py': 'DEP = True\n'})],
        'slowpkg': [build_wheel(files, 'slowpkg', '1.0', {'slowpkg/__init__.py': ''})],
    }
    for name, paths in wheels.items():
        d = root / 'simple' / name
        d.mkdir(parents=True)
        links = ''.join(f'<a href="/files/{p.name}#sha256={hashlib.sha256(p.read_bytes()).hexdigest()}">'
                        f'{p.name}</a>\n' for p in paths)
        (d / 'index.html').write_text(f'<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n')
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                             functools.partial(_Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f'http://127.0.0.1:{server.server_address[1]}/simple/'
    _Handler.slow.clear()
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------------------------------- helpers

class Result:
    def __init__(self, proc_returncode, stdout, stderr):
        self.returncode = proc_returncode
        self.stdout = stdout
        self.stderr = stderr
        self.lines = stdout.splitlines()

    @property
    def last(self):
        return self.lines[-1] if self.lines else ''

    def progress(self):
        return [int(m.group(1)) for m in (re.match(r'progress (\d+) ', l) for l in self.lines) if m]

    def __str__(self):
        return f'exit {self.returncode}\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}'


def clean_env():
    """No proxy of the test runner's environment: the index is on 127.0.0.1."""
    return {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8'}


def run_installer(installer, language, packages_dir, packages=(), requirements=None, index_url=None,
                  registry=None, as_user=None, timeout=180, remove=False, npm=NPM):
    cmd = [installer, '--language', language, '--packages-dir', str(packages_dir)]
    if remove:
        cmd += ['--remove']
    if requirements:
        cmd += ['--requirements', str(requirements)]
    if index_url:
        cmd += ['--index-url', index_url]
    if registry:
        cmd += ['--registry', registry]
    if language == 'python3':
        cmd += ['--python', PYTHON]
    else:
        cmd += ['--npm', npm]
    cmd += ['--', *packages]
    if as_user is not None:
        cmd = ['setpriv', f'--reuid={as_user}', f'--regid={as_user}', '--clear-groups', '--', *cmd]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                          timeout=timeout, text=True)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def check_protocol(res):
    """Every protocol line is well formed and progress never goes back."""
    progress = res.progress()
    assert progress, f'no progress line\n{res}'
    assert progress == sorted(progress), f'progress goes back: {progress}\n{res}'
    assert all(0 <= p <= 100 for p in progress), f'progress out of 0-100: {progress}'
    finals = [l for l in res.lines if l.startswith('generation ') or l.startswith('error: ')]
    assert finals == [res.last], f'the final line must come once and last: {finals}\n{res}'


def assert_success(res, number):
    assert res.returncode == 0, str(res)
    assert res.last == f'generation {number}', str(res)
    check_protocol(res)
    assert res.progress()[-1] == 100, str(res)


def current_of(packages_dir):
    return os.readlink(Path(packages_dir) / 'current')


def generations(packages_dir):
    return sorted(n for n in os.listdir(packages_dir) if n.startswith('gen-') or n.startswith('.gen-'))


def python_import(gen, code):
    proc = subprocess.run([PYTHON, '-S', '-c', f'import sys; sys.path.insert(0, {str(gen / "python")!r}); {code}'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def assert_world_readable(tree):
    """Directories 0755, files 0644 or 0755, nothing writable by others: runs read it under other UIDs."""
    for dirpath, dirnames, filenames in os.walk(tree):
        assert stat.S_IMODE(os.stat(dirpath).st_mode) == 0o755, dirpath
        for f in filenames:
            st = os.lstat(os.path.join(dirpath, f))
            if stat.S_ISLNK(st.st_mode):
                continue
            assert stat.S_IMODE(st.st_mode) in (0o644, 0o755), f'{dirpath}/{f}: {oct(st.st_mode)}'


# --------------------------------------------------------------------------------------------- pip

def test_python_install_makes_a_generation(installer, index, workdir):
    pkgdir = workdir / 'packages'
    res = run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], index_url=index)
    assert_success(res, 1)
    assert current_of(pkgdir) == 'gen-1'
    gen = pkgdir / 'gen-1'
    assert python_import(gen, 'import tinypkg; print(tinypkg.VALUE)') == 'one'
    assert (gen / 'extra-packages.txt').read_text().splitlines()[-1] == 'tinypkg==1.0'
    assert 'tinypkg==1.0' in (gen / 'requirements.txt').read_text().splitlines()
    # pip's own lines are forwarded, indented, and the progress follows pip's phases
    assert any(l.startswith('  Collecting tinypkg') for l in res.lines), str(res)
    assert any(l.startswith('progress 70 ') for l in res.lines), str(res)
    # what the installer needed only while building is gone; the generation is readable by everyone
    for scratch in ('.home', '.tmp', '.npm-cache'):
        assert not (gen / scratch).exists(), scratch
    assert generations(pkgdir) == ['gen-1']
    assert_world_readable(gen)


def test_python_failure_leaves_current_and_reports_pip_error(installer, index, workdir):
    pkgdir = workdir / 'packages'
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], index_url=index), 1)

    res = run_installer(installer, 'python3', pkgdir, ['nosuchpkg'], index_url=index)
    assert res.returncode == 1, str(res)
    check_protocol(res)
    assert res.last.startswith('error: pip failed'), str(res)
    assert 'No matching distribution found for nosuchpkg' in res.last, str(res)
    assert current_of(pkgdir) == 'gen-1'
    assert generations(pkgdir) == ['gen-1'], 'the failed generation was not removed'
    # the failed argument was not recorded either: a refresh still installs only tinypkg
    assert 'nosuchpkg' not in (pkgdir / 'gen-1' / 'extra-packages.txt').read_text()


def test_collect_keeps_a_generation_held_by_a_run(installer, index, workdir):
    pkgdir = workdir / 'packages'
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], index_url=index), 1)
    held = os.open(pkgdir / 'gen-1', os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_SH)  # as a run holds its generation
        assert_success(run_installer(installer, 'python3', pkgdir, index_url=index), 2)
        assert_success(run_installer(installer, 'python3', pkgdir, index_url=index), 3)
        # gen-2 (not held) was collected by the third install; gen-1 (held) survives both
        assert generations(pkgdir) == ['gen-1', 'gen-3'], generations(pkgdir)
        assert current_of(pkgdir) == 'gen-3'
        assert python_import(pkgdir / 'gen-1', 'import tinypkg; print(tinypkg.VALUE)') == 'one'
    finally:
        os.close(held)
    assert_success(run_installer(installer, 'python3', pkgdir, index_url=index), 4)
    assert generations(pkgdir) == ['gen-4'], generations(pkgdir)


def test_refresh_keeps_extra_packages_and_later_wins(installer, index, workdir):
    pkgdir = workdir / 'packages'
    reqs = workdir / 'python-requirements.txt'
    reqs.write_text('# shipped requirements\ntinydep  # a comment\n')

    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], requirements=reqs,
                                 index_url=index), 1)
    # a refresh: the requirement file only, no arguments
    res = run_installer(installer, 'python3', pkgdir, requirements=reqs, index_url=index)
    assert_success(res, 2)
    gen = pkgdir / 'gen-2'
    assert python_import(gen, 'import tinypkg, tinydep; print(tinypkg.VALUE, tinydep.DEP)') == 'one True'
    assert [l for l in (gen / 'extra-packages.txt').read_text().splitlines() if not l.startswith('#')] == \
        ['tinypkg==1.0']
    assert [l for l in (gen / 'requirements.txt').read_text().splitlines() if not l.startswith('#')] == \
        ['tinydep', 'tinypkg==1.0']

    # the same name again: the later argument replaces the earlier one, in extra-packages.txt too
    assert_success(run_installer(installer, 'python3', pkgdir, ['TinyPkg>=2'], requirements=reqs,
                                 index_url=index), 3)
    gen = pkgdir / 'gen-3'
    assert python_import(gen, 'import tinypkg; print(tinypkg.VALUE)') == 'two'
    assert [l for l in (gen / 'extra-packages.txt').read_text().splitlines() if not l.startswith('#')] == \
        ['TinyPkg>=2']


def test_remove_leaves_a_package_out_of_a_new_generation(installer, index, workdir):
    """--remove (RemoveDependencies): a new generation with the requirement file's packages and the
    other earlier ones, without the named one; the generation before keeps it for runs in flight."""
    pkgdir = workdir / 'packages'
    reqs = workdir / 'python-requirements.txt'
    reqs.write_text('tinydep\n')
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0', 'slowpkg'], requirements=reqs,
                                 index_url=index), 1)
    held = os.open(pkgdir / 'gen-1', os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_SH)  # a run in flight
        res = run_installer(installer, 'python3', pkgdir, ['TinyPkg'], requirements=reqs, index_url=index,
                            remove=True)  # PEP 503: the same name
        assert_success(res, 2)
        gen = pkgdir / 'gen-2'
        assert python_import(gen, 'import importlib.util as u; print(u.find_spec("tinypkg") is None, '
                                  'u.find_spec("slowpkg") is not None, u.find_spec("tinydep") is not None)') == \
            'True True True'
        assert [l for l in (gen / 'extra-packages.txt').read_text().splitlines() if not l.startswith('#')] == \
            ['slowpkg']
        assert python_import(pkgdir / 'gen-1', 'import tinypkg; print(tinypkg.VALUE)') == 'one'
    finally:
        os.close(held)
    # a later refresh does not bring it back
    assert_success(run_installer(installer, 'python3', pkgdir, requirements=reqs, index_url=index), 3)
    assert python_import(pkgdir / 'gen-3', 'import importlib.util as u; print(u.find_spec("tinypkg"))') == 'None'


def test_remove_refuses_what_it_cannot_remove(installer, index, workdir):
    pkgdir = workdir / 'packages'
    reqs = workdir / 'python-requirements.txt'
    reqs.write_text('tinydep\n')
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], requirements=reqs,
                                 index_url=index), 1)
    for name, reason in [('tinydep', f'comes from the requirement file {reqs}: remove it there, then refresh'),
                         ('nosuchpkg', "package 'nosuchpkg' is not installed"),
                         ('tinypkg==1.0', 'expected a package name alone, without a version'),
                         ('-rfoo', 'options')]:
        res = run_installer(installer, 'python3', pkgdir, [name], requirements=reqs, index_url=index,
                            remove=True)
        assert res.returncode == 1, str(res)
        assert res.last.startswith('error: ') and reason in res.last, str(res)
        assert current_of(pkgdir) == 'gen-1' and generations(pkgdir) == ['gen-1'], str(res)


def test_missing_npm_says_how_to_install_it(installer, workdir):
    """Debian ships npm apart from nodejs: name it and the way to get it, not exec's ENOENT."""
    pkgdir = workdir / 'packages'
    res = run_installer(installer, 'nodejs', pkgdir, ['left-pad@1.3.0'], registry=NO_REGISTRY,
                        npm='/nonexistent/bin/npm')
    assert res.returncode == 1, str(res)
    check_protocol(res)
    assert res.last.startswith('error: npm is not installed (/nonexistent/bin/npm: No such file or directory)'), \
        str(res)
    assert 'apt install npm' in res.last, str(res)
    assert not (pkgdir / 'current').exists()
    assert not pkgdir.exists() or generations(pkgdir) == []


def test_refuses_options_before_touching_anything(installer, index, workdir):
    pkgdir = workdir / 'packages'
    for bad, reason in [('-r/etc/passwd', 'options'), ('--index-url=http://evil/', 'options'),
                        ('tinypkg @ http://127.0.0.1/x.whl', 'direct references'),
                        ('./tinypkg', 'paths'), ('git+https://example.com/x.git', 'URLs')]:
        res = run_installer(installer, 'python3', pkgdir, [bad], index_url=index)
        assert res.returncode == 1, str(res)
        assert res.last.startswith('error: package '), str(res)
        assert reason in res.last, str(res)
    assert not pkgdir.exists(), 'a refused argument must not even create the packages directory'

    reqs = workdir / 'reqs.txt'
    reqs.write_text('tinypkg\n\n--extra-index-url http://evil.example/simple\n')
    res = run_installer(installer, 'python3', pkgdir, requirements=reqs, index_url=index)
    assert res.returncode == 1, str(res)
    assert f'{reqs}:3:' in res.last and 'options' in res.last, str(res)
    assert not pkgdir.exists()


def test_missing_requirement_file_is_empty_unreadable_is_an_error(installer, index, workdir):
    pkgdir = workdir / 'packages'
    assert_success(run_installer(installer, 'python3', pkgdir, requirements=workdir / 'none.txt',
                                 index_url=index), 1)
    assert os.listdir(pkgdir / 'gen-1' / 'python') == []

    unreadable = workdir / 'unreadable.txt'
    unreadable.write_text('tinypkg\n')
    os.chmod(unreadable, 0)
    res = run_installer(installer, 'python3', pkgdir, requirements=unreadable, index_url=index, as_user=NOBODY)
    assert res.returncode == 1, str(res)
    assert 'cannot read' in res.last and 'Permission denied' in res.last, str(res)
    assert current_of(pkgdir) == 'gen-1'


@pytest.mark.parametrize('language,name', [('python3', 'python-requirements.txt'),
                                           ('nodejs', 'nodejs-packages.txt')])
def test_shipped_requirement_files(installer, workdir, language, name):
    """The files in dependencies/ parse, and hold no package (the runtime tree brings them)."""
    shipped = Path(__file__).resolve().parents[2] / 'dependencies' / name
    assert shipped.is_file()
    pkgdir = workdir / 'packages'
    res = run_installer(installer, language, pkgdir, requirements=shipped, registry=None, index_url=None)
    assert_success(res, 1)
    assert f'no packages: generation 1 is empty' in res.lines, str(res)


def test_unprivileged_install(installer, index, workdir):
    """As nobody, in a packages directory nobody owns: no root needed, and the result belongs to nobody."""
    pkgdir = workdir / 'packages'
    pkgdir.mkdir()
    os.chown(pkgdir, NOBODY, NOBODY)
    res = run_installer(installer, 'python3', pkgdir, ['tinypkg==2.0'], index_url=index, as_user=NOBODY)
    assert_success(res, 1)
    gen = pkgdir / 'gen-1'
    assert os.stat(gen).st_uid == NOBODY
    assert os.stat(gen / 'python' / 'tinypkg' / '__init__.py').st_uid == NOBODY
    assert python_import(gen, 'import tinypkg, tinydep; print(tinypkg.VALUE)') == 'two'
    assert_world_readable(gen)


def test_sigterm_kills_pip_and_aborts(installer, index, workdir):
    pkgdir = workdir / 'packages'
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], index_url=index), 1)

    _Handler.slow.set()
    try:
        proc = subprocess.Popen([installer, '--language', 'python3', '--packages-dir', str(pkgdir),
                                 '--index-url', index, '--python', PYTHON, '--', 'slowpkg'],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), text=True)
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip('\n'))
            if line.startswith('progress 5 '):  # pip is running
                break
        time.sleep(1)
        pip_pids = [p for p in (int(e) for e in os.listdir('/proc') if e.isdigit()) if _ppid(p) == proc.pid]
        assert pip_pids, 'pip is not running under the installer'
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - start
    finally:
        _Handler.slow.clear()
    lines += out.splitlines()
    assert proc.returncode == 1, '\n'.join(lines) + err
    assert lines[-1] == 'error: interrupted by SIGTERM', '\n'.join(lines)
    assert elapsed < 10, f'took {elapsed:.1f}s to stop'
    for pid in pip_pids:
        assert not os.path.exists(f'/proc/{pid}') or _state(pid) == 'Z', f'pip {pid} survived SIGTERM'
    assert current_of(pkgdir) == 'gen-1'
    assert generations(pkgdir) == ['gen-1']


def test_killed_installer_leaves_nothing_behind(installer, index, workdir):
    """SIGKILL (no chance to clean up): pip dies with it, and the next install removes the half-built
    generation and does not reuse its number."""
    pkgdir = workdir / 'packages'
    assert_success(run_installer(installer, 'python3', pkgdir, ['tinypkg==1.0'], index_url=index), 1)
    _Handler.slow.set()
    try:
        proc = subprocess.Popen([installer, '--language', 'python3', '--packages-dir', str(pkgdir),
                                 '--index-url', index, '--python', PYTHON, '--', 'slowpkg'],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env(), text=True)
        for line in proc.stdout:
            if line.startswith('progress 5 '):
                break
        time.sleep(1)
        pip_pids = [p for p in (int(e) for e in os.listdir('/proc') if e.isdigit()) if _ppid(p) == proc.pid]
        assert pip_pids, 'pip is not running under the installer'
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        _Handler.slow.clear()
    deadline = time.monotonic() + 10
    while any(os.path.exists(f'/proc/{p}') and _state(p) != 'Z' for p in pip_pids):
        assert time.monotonic() < deadline, 'pip survived the installer'
        time.sleep(0.1)
    assert generations(pkgdir) == ['.gen-2.tmp', 'gen-1']
    assert current_of(pkgdir) == 'gen-1'

    assert_success(run_installer(installer, 'python3', pkgdir, index_url=index), 3)
    assert generations(pkgdir) == ['gen-3']
    # the refresh kept tinypkg (recorded in gen-1), not slowpkg (never committed)
    assert python_import(pkgdir / 'gen-3', 'import tinypkg; print(tinypkg.VALUE)') == 'one'
    assert 'slowpkg' not in (pkgdir / 'gen-3' / 'extra-packages.txt').read_text()


def _stat_fields(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None


def _ppid(pid):
    f = _stat_fields(pid)
    return int(f[1]) if f else None


def _state(pid):
    f = _stat_fields(pid)
    return f[0] if f else None


# --------------------------------------------------------------------------------------------- npm

def npm_pack(workdir, name, version, body):
    src = workdir / ('src-' + name.replace('/', '-').lstrip('@') + '-' + version)
    src.mkdir()
    (src / 'package.json').write_text(json.dumps({'name': name, 'version': version, 'main': 'index.js'}))
    (src / 'index.js').write_text(body)
    env = clean_env()
    env['npm_config_cache'] = str(workdir / '.npm-cache-pack')
    proc = subprocess.run([NPM, 'pack', '--silent', '--pack-destination', str(workdir)], cwd=src, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    tgz = workdir / proc.stdout.strip().splitlines()[-1]
    assert tgz.is_file(), proc.stdout
    os.chmod(tgz, 0o644)
    return tgz


def node_require(gen, name):
    proc = subprocess.run(['node', '-e', f'console.log(JSON.stringify(require({name!r})))'],
                          env={'NODE_PATH': str(gen / 'node_modules'), 'PATH': clean_env()['PATH']},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# Nothing listens there: an install that tried the registry would fail.
NO_REGISTRY = 'http://127.0.0.1:9/'


@pytest.mark.parametrize('as_user', [None, NOBODY], ids=['root', 'nobody'])
def test_nodejs_tarball_install_and_refresh(installer, workdir, as_user):
    pkgdir = workdir / 'packages'
    if as_user is not None:
        pkgdir.mkdir()
        os.chown(pkgdir, as_user, as_user)
    tgz = npm_pack(workdir, '@demo/tiny', '1.2.3', 'module.exports = {answer: 42};\n')

    res = run_installer(installer, 'nodejs', pkgdir, [str(tgz)], registry=NO_REGISTRY, as_user=as_user)
    assert_success(res, 1)
    gen = pkgdir / 'gen-1'
    assert node_require(gen, '@demo/tiny') == {'answer': 42}
    assert (gen / 'tarballs' / 'demo+tiny.tgz').is_file()
    assert json.loads((gen / 'package.json').read_text())['dependencies'] == \
        {'@demo/tiny': 'file:tarballs/demo+tiny.tgz'}
    extra = [l for l in (gen / 'extra-packages.txt').read_text().splitlines() if not l.startswith('#')]
    assert extra == ['tarballs/demo+tiny.tgz']
    for scratch in ('.home', '.tmp', '.npm-cache'):
        assert not (gen / scratch).exists(), scratch
    assert_world_readable(gen)
    if as_user is not None:
        assert os.stat(gen / 'node_modules' / '@demo' / 'tiny' / 'index.js').st_uid == as_user

    # A refresh after the operator's tarball is gone: the copy in gen-1 is installed into gen-2, and gen-1
    # is collected.
    tgz.unlink()
    res = run_installer(installer, 'nodejs', pkgdir, registry=NO_REGISTRY, as_user=as_user)
    assert_success(res, 2)
    assert generations(pkgdir) == ['gen-2']
    assert node_require(pkgdir / 'gen-2', '@demo/tiny') == {'answer': 42}

    # A newer tarball of the same package replaces it
    tgz2 = npm_pack(workdir, '@demo/tiny', '1.3.0', 'module.exports = {answer: 43};\n')
    assert_success(run_installer(installer, 'nodejs', pkgdir, [str(tgz2)], registry=NO_REGISTRY,
                                 as_user=as_user), 3)
    gen = pkgdir / 'gen-3'
    assert node_require(gen, '@demo/tiny') == {'answer': 43}
    extra = [l for l in (gen / 'extra-packages.txt').read_text().splitlines() if not l.startswith('#')]
    assert extra == ['tarballs/demo+tiny.tgz']


def test_nodejs_failure_reports_npm_error(installer, index, workdir):
    pkgdir = workdir / 'packages'
    registry = index.rsplit('/simple/', 1)[0] + '/'  # a registry that knows no package: 404
    assert_success(run_installer(installer, 'nodejs', pkgdir, registry=registry), 1)
    res = run_installer(installer, 'nodejs', pkgdir, ['left-pad@1.3.0'], registry=registry)
    assert res.returncode == 1, str(res)
    check_protocol(res)
    assert res.last.startswith('error: npm failed'), str(res)
    # npm 10 (Debian 12's image here) says "npm error 404", npm 9 (Debian 13's package) "npm ERR! 404".
    assert ('npm error 404' in res.last or 'npm ERR! 404' in res.last) and 'GET ' + registry + 'left-pad' in res.last, str(res)
    assert current_of(pkgdir) == 'gen-1'
    assert generations(pkgdir) == ['gen-1']


def test_nodejs_refuses_non_specs(installer, workdir):
    pkgdir = workdir / 'packages'
    notgz = workdir / 'x.txt'
    notgz.write_text('x')
    for bad, reason in [('--registry=http://evil/', 'options'), ('git+https://example.com/x.git', 'URLs'),
                        ('user/repo', 'repositories'), ('./local', 'paths'), (str(notgz), '.tgz'),
                        (str(workdir / 'missing.tgz'), 'No such file')]:
        res = run_installer(installer, 'nodejs', pkgdir, [bad], registry=NO_REGISTRY)
        assert res.returncode == 1, str(res)
        assert res.last.startswith('error: package '), str(res)
        assert reason in res.last, str(res)
    assert not pkgdir.exists()

    # a .tgz that is no package passes the check, and fails once the installer looks into it
    garbage = workdir / 'garbage.tgz'
    garbage.write_bytes(b'not a tarball')
    res = run_installer(installer, 'nodejs', pkgdir, [str(garbage)], registry=NO_REGISTRY)
    assert res.returncode == 1, str(res)
    assert res.last == f"error: '{garbage}' is not a package tarball: it has no package/package.json", str(res)
    assert generations(pkgdir) == []


def _all_cmdlines():
    out = []
    for e in os.listdir('/proc'):
        if e.isdigit():
            try:
                out.append(Path(f'/proc/{e}/cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace'))
            except OSError:
                pass
    return out


def test_settings_on_stdin_keep_the_index_password_off_every_command_line(installer, index, workdir):
    """--settings-on-stdin (as the manager starts it): the index URL's password is on no command line,
    the installer's or pip's, while pip fetches (slowpkg holds it there), and on no line it prints."""
    pkgdir = workdir / 'packages'
    secret = 's3cret-in-the-index-url'
    authed = index.replace('http://', f'http://alice:{secret}@')
    _Handler.slow.set()
    try:
        proc = subprocess.Popen([installer, '--language', 'python3', '--packages-dir', str(pkgdir),
                                 '--python', PYTHON, '--settings-on-stdin', '--', 'tinypkg==1.0', 'slowpkg'],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=clean_env(), text=True)
        proc.stdin.write(f'index-url={authed}\n')
        proc.stdin.close()
        proc.stdin = None  # communicate() must not flush it
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip('\n'))
            if line.startswith('progress 5 '):  # pip is running
                break
        seen = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            seen += [c for c in _all_cmdlines() if 'alice' in c or secret in c]
            time.sleep(0.1)
    finally:
        _Handler.slow.clear()
    out, err = proc.communicate(timeout=120)
    lines += out.splitlines()
    res = Result(proc.returncode, '\n'.join(lines) + '\n', err)
    assert_success(res, 1)
    assert not seen, f'the index URL is on a command line: {seen}'
    assert secret not in res.stdout and secret not in err, str(res)
    assert python_import(pkgdir / 'gen-1', 'import tinypkg; print(tinypkg.VALUE)') == 'one'


def test_settings_on_stdin_are_checked(installer, workdir):
    for text, reason in [('index-url\n', "has no '='"), ('password=x\n', "unknown setting 'password'"),
                         ('index-url=ftp://alice:pw@h/\n', 'is not an http:// or https:// URL')]:
        proc = subprocess.run([installer, '--language', 'python3', '--packages-dir', str(workdir / 'p'),
                               '--settings-on-stdin', '--', 'tinypkg'], input=text, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=clean_env(), text=True, timeout=60)
        assert proc.returncode == 1, proc.stdout
        assert reason in proc.stdout.splitlines()[-1], proc.stdout
        assert 'pw' not in proc.stdout.splitlines()[-1], proc.stdout  # redacted: https://***@h/
