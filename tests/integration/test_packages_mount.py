"""Runs see their language's current dependency generation, read-only (DESIGN §3 step 5, §4).

A generation is <runtime_dir>/<language>/packages/gen-<N> (src/common/generation.h), with python/ (pip
--target) or node_modules/ inside, and `current` naming the one new runs get. A run mounts it at
/usr/lib/difysandbox-packages and holds it flock()ed shared for as long as it lasts, so that a new generation
switched in meanwhile, or a collector, changes nothing for it.

These tests never touch the real /var/lib/difysandbox: they build their own runtime trees with the
repository's difysandbox-prepare-runtime into a private runtime_dir (hard links, about a second per
language) and point `difysandbox run` and `difysandbox serve` at it with DIFYSANDBOX_RUNTIME_DIR. The
generations in it are made by hand, as root, the way the installer lays them out.
"""

import fcntl
import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from conftest import REPO, command, finish_snippet, parse_output, sandbox_env
from serve_helpers import children_of, process_uid, start_server

PREPARE_RUNTIME = REPO / 'scripts' / 'difysandbox-prepare-runtime'
MOUNT = '/usr/lib/difysandbox-packages'  # RUNTIME_PACKAGES_MOUNT in src/common/generation.h
EROFS_PY = '''
import errno, os
def attempt(what, f):
    try:
        f()
        print(what, 'WROTE')
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, e.errno))
attempt('create', lambda: open('{d}/new-file', 'w').write('x'))
attempt('append', lambda: open('{d}/mymod/__init__.py', 'a').write('x'))
attempt('mkdir', lambda: os.mkdir('{d}/newdir'))
attempt('unlink', lambda: os.unlink('{d}/mymod/__init__.py'))
attempt('rename', lambda: os.rename('{d}/mymod', '{d}/othermod'))
attempt('chmod', lambda: os.chmod('{d}/mymod/__init__.py', 0o777))
'''


# ------------------------------------------------------------------------------------------ helpers

class RuntimeDir:
    """A private runtime_dir: trees built by difysandbox-prepare-runtime, generations made by hand."""

    def __init__(self, path):
        self.path = Path(path)

    def packages(self, language):
        return self.path / language / 'packages'

    def generation(self, language, n):
        return self.packages(language) / f'gen-{n}'

    def make_generation(self, language, n, files):
        """gen-<n> with files {relative path: text}, root-owned, directories 0755, files 0644."""
        gen = self.generation(language, n)
        gen.mkdir(mode=0o755, parents=True)
        for rel, text in files.items():
            p = gen / rel
            p.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            p.write_text(text)
            p.chmod(0o644)
        return gen

    def switch(self, language, n):
        """Makes gen-<n> current the way the installer does: a new symlink renamed over the old one."""
        tmp = self.packages(language) / '.current.tmp'
        os.symlink(f'gen-{n}', tmp)
        os.replace(tmp, self.packages(language) / 'current')

    def clear(self, language):
        shutil.rmtree(self.packages(language), ignore_errors=True)

    def env(self):
        env = sandbox_env()
        env['DIFYSANDBOX_RUNTIME_DIR'] = str(self.path)
        return env

    def run(self, code, language='python3', timeout=120):
        proc = subprocess.run(command(language), input=code.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=self.env(), timeout=timeout)
        return parse_output(proc.stdout.decode(), proc.stderr.decode('utf-8', 'replace'), proc.returncode)

    def run_failing(self, code, language='python3', timeout=120):
        """A run the sandbox refuses: (exit status, stderr) of `difysandbox run`."""
        proc = subprocess.run(command(language), input=code.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=self.env(), timeout=timeout)
        return proc.returncode, proc.stdout.decode('utf-8', 'replace'), proc.stderr.decode('utf-8', 'replace')

    def start(self, code, language='python3'):
        proc = subprocess.Popen(command(language), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env())
        proc.started = time.monotonic()
        proc.stdin.write(code.encode())
        proc.stdin.close()
        proc.stdin = None
        return proc


def held(directory):
    """Whether someone holds a flock() on the directory: our exclusive, non-blocking try fails."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases ours, if we got it
    return False


def wait_held(directory, proc=None, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if held(directory):
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def ok(res):
    assert res['result'] == 'ok' and res['exit_code'] == 0 and res['error'] == '', res.show()
    return res['stdout']


def python_module(name, value):
    return {f'python/{name}/__init__.py': f'VALUE = {value!r}\n'}


def node_package(name, value):
    return {f'node_modules/{name}/package.json': f'{{"name": "{name}", "version": "1.0.0", "main": "index.js"}}\n',
            f'node_modules/{name}/index.js': f'module.exports = {{ value: {value!r} }};\n'}


def both(value):
    return {**python_module('mymod', value), **node_package('mypkg', value)}


READ_PY = 'import mymod\nprint(mymod.VALUE, mymod.__file__)\n'
READ_JS = 'const m = require("mypkg");\nconsole.log(m.value, require.resolve("mypkg"));\n'
READ = {'python3': READ_PY, 'nodejs': READ_JS}


def expected_read(language, value):
    if language == 'python3':
        return f'{value} {MOUNT}/python/mymod/__init__.py\n'
    return f'{value} {MOUNT}/node_modules/mypkg/index.js\n'


# ----------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope='module')
def rtdir(sandbox_bin):
    path = tempfile.mkdtemp(prefix='difysandbox-packages-test-')
    os.chmod(path, 0o755)
    try:
        for language in ('python3', 'nodejs'):
            p = subprocess.run(['/usr/bin/python3', str(PREPARE_RUNTIME), '--runtime-dir', path, language],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            assert p.returncode == 0, f'difysandbox-prepare-runtime {language}:\n{p.stdout.decode()}'
            tree = Path(path) / language / 'current'
            mount_point = tree / MOUNT.lstrip('/')
            assert mount_point.is_dir() and not mount_point.is_symlink(), \
                f'the tree {os.path.realpath(tree)} has no {MOUNT} directory'
            st = mount_point.stat()
            assert (st.st_uid, st.st_mode & 0o7777, os.listdir(mount_point)) == (0, 0o755, []), \
                f'{mount_point}: uid {st.st_uid} mode {oct(st.st_mode)} {os.listdir(mount_point)}'
        yield RuntimeDir(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def rt(rtdir):
    """The private runtime_dir, with no generation before and after each test."""
    for language in ('python3', 'nodejs'):
        rtdir.clear(language)
    yield rtdir
    for language in ('python3', 'nodejs'):
        rtdir.clear(language)


# --------------------------------------------------------------------------------- what runs see

@pytest.mark.parametrize('language', ['python3', 'nodejs'])
def test_a_run_uses_the_current_generation(rt, language):
    rt.make_generation(language, 1, both('from-gen-1'))
    rt.make_generation(language, 2, both('from-gen-2'))
    rt.switch(language, 1)
    assert ok(rt.run(READ[language], language)) == expected_read(language, 'from-gen-1')
    rt.switch(language, 2)
    assert ok(rt.run(READ[language], language)) == expected_read(language, 'from-gen-2')


def test_node_packages_find_their_own_dependencies(rt):
    """npm lays dependencies out side by side in node_modules/: a package's require() finds them from where
    it is, and the code's require() finds the package without NODE_PATH in its environment."""
    rt.make_generation('nodejs', 1, {
        **node_package('mydep', 'dependency'),
        'node_modules/mypkg/package.json': '{"name": "mypkg", "version": "2.0.0", "main": "lib/main.js"}\n',
        'node_modules/mypkg/lib/main.js': 'module.exports = { dep: require("mydep").value };\n',
    })
    rt.switch('nodejs', 1)
    out = ok(rt.run('console.log(require("mypkg").dep, require.resolve("mypkg"));\n'
                    'console.log(require("mypkg/package.json").version, "NODE_PATH" in process.env);\n', 'nodejs'))
    assert out == f'dependency {MOUNT}/node_modules/mypkg/lib/main.js\n2.0.0 false\n', out


def test_python_generation_comes_before_debian_packages_but_after_the_stdlib(rt):
    rt.make_generation('python3', 1, {
        # A newer jinja2 installed with pip must win over the tree's Debian one.
        'python/jinja2/__init__.py': '__version__ = "99.0-from-generation"\n',
        # The standard library is not for a package to replace.
        'python/json/__init__.py': 'raise ImportError("the generation shadowed the standard library")\n',
        # pip puts .pth files at the top of --target (namespace packages, setuptools): they apply.
        'python/extra.pth': f'{MOUNT}/python/extra\n',
        'python/extra/pthmod.py': 'VALUE = "found through a .pth file"\n',
    })
    rt.switch('python3', 1)
    out = ok(rt.run('import jinja2, json, pthmod, sys\n'
                    'print(jinja2.__version__)\n'
                    'print(json.__file__)\n'
                    'print(pthmod.VALUE)\n'
                    'print([p for p in sys.path if p.startswith("' + MOUNT + '") or p.endswith("-packages")])\n'
                    'print(sorted(k for k in globals() if not k.startswith("__")))\n'))
    lines = out.splitlines()
    assert lines[0] == '99.0-from-generation', out
    assert lines[1].startswith('/usr/lib/python3.') and lines[1].endswith('/json/__init__.py'), out
    assert lines[2] == 'found through a .pth file', out
    paths = eval(lines[3])
    assert paths[:2] == [f'{MOUNT}/python', f'{MOUNT}/python/extra'], out
    assert all(p.endswith('-packages') for p in paths[2:]) and paths[2:], out
    # The bootstrap's own names are gone before the code runs.
    assert eval(lines[4]) == ['jinja2', 'json', 'pthmod', 'sys'], out


def test_pandas_and_numpy_from_the_generation(rt):
    """Packages with C extensions, threads (OpenBLAS) and a heavy import, loaded from the mount: it is not
    noexec, and what they do at import is allowed (or fails cleanly, as pandas' `uname -p`)."""
    found = {}
    for name in ('numpy', 'pandas'):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            pytest.skip(f'{name} is not installed on the host (apt-get install python3-{name})')
        found[name] = spec.submodule_search_locations[0]
    gen = rt.make_generation('python3', 1, {})

    def link_or_copy(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    for name, src in found.items():
        shutil.copytree(src, gen / 'python' / name, symlinks=True, copy_function=link_or_copy)
    rt.switch('python3', 1)
    out = ok(rt.run('import numpy, pandas\n'
                    'print(numpy.__file__)\n'
                    'print(pandas.__file__)\n'
                    'df = pandas.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.5, 6.5]})\n'
                    'print(int(df["a"].sum()), float(df["b"].mean()))\n'
                    'print(round(float(numpy.linalg.det(numpy.array([[1.0, 2.0], [3.0, 4.0]]))), 6))\n'))
    assert out.splitlines() == [f'{MOUNT}/python/numpy/__init__.py', f'{MOUNT}/python/pandas/__init__.py',
                                "6 5.333333333333333", '-2.0'], out


def writable_by_all(gen, directories, files):
    """So that only the mount can refuse a write, not the permissions (which the installer sets)."""
    for d in directories:
        os.chmod(gen / d, 0o777)
    for f in files:
        os.chmod(gen / f, 0o666)


def test_python_runs_cannot_write_into_the_generation(rt):
    gen = rt.make_generation('python3', 1, python_module('mymod', 'untouched'))
    writable_by_all(gen, ['python', 'python/mymod'], ['python/mymod/__init__.py'])
    rt.switch('python3', 1)
    before = sorted(p.name for p in (gen / 'python').iterdir())
    out = ok(rt.run(EROFS_PY.format(d=f'{MOUNT}/python') +
                    # statfs(2) fails with ENOSYS in runs (issue 12: it showed the host's disks), so the
                    # mount is judged by the EROFS above, not by its flags.
                    'import errno, os\n'
                    'try:\n    os.statvfs("' + MOUNT + '")\n    print("flags shown")\n'
                    'except OSError as e:\n    print("statvfs", errno.errorcode[e.errno])\n'))
    assert out.splitlines() == ['create EROFS', 'append EROFS', 'mkdir EROFS', 'unlink EROFS', 'rename EROFS',
                                'chmod EROFS', 'statvfs ENOSYS'], out
    assert sorted(p.name for p in (gen / 'python').iterdir()) == before
    assert (gen / 'python' / 'mymod' / '__init__.py').read_text() == "VALUE = 'untouched'\n"
    assert (gen / 'python' / 'mymod' / '__init__.py').stat().st_mode & 0o777 == 0o666


def test_node_runs_cannot_write_into_the_generation(rt):
    gen = rt.make_generation('nodejs', 1, node_package('mypkg', 'untouched'))
    writable_by_all(gen, ['node_modules', 'node_modules/mypkg'], ['node_modules/mypkg/index.js'])
    rt.switch('nodejs', 1)
    d = f'{MOUNT}/node_modules'
    out = ok(rt.run(f'''
const fs = require("fs");
for (const [what, f] of [
        ["create", () => fs.writeFileSync("{d}/new-file", "x")],
        ["append", () => fs.appendFileSync("{d}/mypkg/index.js", "x")],
        ["mkdir", () => fs.mkdirSync("{d}/newdir")],
        ["unlink", () => fs.unlinkSync("{d}/mypkg/index.js")],
        ["rename", () => fs.renameSync("{d}/mypkg", "{d}/otherpkg")]]) {{
        try {{ f(); console.log(what, "WROTE"); }} catch (e) {{ console.log(what, e.code); }}
}}
''', 'nodejs'))
    assert out.splitlines() == ['create EROFS', 'append EROFS', 'mkdir EROFS', 'unlink EROFS', 'rename EROFS'], out
    assert sorted(p.name for p in (gen / 'node_modules').iterdir()) == ['mypkg']
    assert (gen / 'node_modules' / 'mypkg' / 'index.js').read_text() == "module.exports = { value: 'untouched' };\n"


def test_no_fd_of_the_generation_reaches_the_run(rt):
    """The run gets the mount, not the worker's locked fd (nor the detached mount's)."""
    gen = rt.make_generation('python3', 1, python_module('mymod', 'x'))
    rt.switch('python3', 1)
    st = os.stat(gen)
    out = ok(rt.run('import os, stat\n'
                    'mine = os.stat("' + MOUNT + '")\n'
                    'print(mine.st_dev, mine.st_ino)\n'
                    'for fd in range(256):\n'
                    '    try:\n'
                    '        s = os.fstat(fd)\n'
                    '    except OSError:\n'
                    '        continue\n'
                    '    print(fd, s.st_dev, s.st_ino, stat.S_ISDIR(s.st_mode))\n'))
    lines = out.splitlines()
    assert lines[0] == f'{st.st_dev} {st.st_ino}', out  # the mount is that very directory
    for line in lines[1:]:
        fd, dev, ino, is_dir = line.split()
        assert (int(dev), int(ino)) != (st.st_dev, st.st_ino), f'fd {fd} of the run is the generation:\n{out}'
        assert is_dir == 'False', f'fd {fd} of the run is a directory:\n{out}'


# ---------------------------------------------------------------------- generations over time

def test_a_run_holds_its_generation_locked_until_it_ends(rt):
    gen = rt.make_generation('python3', 1, python_module('mymod', 'locked'))
    rt.switch('python3', 1)
    assert not held(gen)
    proc = rt.start('import mymod, time\nprint(mymod.VALUE, flush=True)\ntime.sleep(3)\n')
    assert wait_held(gen, proc), 'the run did not hold its generation shared-locked'
    while proc.poll() is None and time.monotonic() - proc.started < 2:
        assert held(gen), 'the generation was released while its run still ran'
        time.sleep(0.1)
    res = finish_snippet(proc)
    assert ok(res) == 'locked\n'
    assert not held(gen), 'the generation is still locked after its run ended'


@pytest.mark.parametrize('language', ['python3', 'nodejs'])
def test_switching_current_does_not_change_a_run_in_flight(rt, language):
    gen1 = rt.make_generation(language, 1, both('old'))
    rt.switch(language, 1)
    if language == 'python3':
        code = ('import os, time\ntime.sleep(3)\nimport mymod\nprint(mymod.VALUE)\n'
                f'print(sorted(os.listdir("{MOUNT}/python")))\n')
    else:
        code = ('setTimeout(() => { console.log(require("mypkg").value);\n'
                f'console.log(JSON.stringify(require("fs").readdirSync("{MOUNT}/node_modules").sort())); }}, 3000);\n')
    proc = rt.start(code, language)
    assert wait_held(gen1, proc), 'the run did not take its generation'
    # A new generation, with one more package, becomes current while the run sleeps.
    rt.make_generation(language, 2, {**both('new'), **python_module('onlynew', 1), **node_package('onlynew', 1)})
    rt.switch(language, 2)
    switched_after = time.monotonic() - proc.started
    assert switched_after < 2.5, f'switching took until {switched_after:.1f} s into the run: the test proves nothing'
    # New runs get the new one meanwhile; the sleeping run keeps the old one locked.
    assert ok(rt.run(READ[language], language)) == expected_read(language, 'new')
    assert held(gen1)
    out = ok(finish_snippet(proc))
    if language == 'python3':
        assert out == "old\n['mymod']\n", out
    else:
        assert out == 'old\n["mypkg"]\n', out
    assert not held(gen1)


def _prepared_runs(server):
    """UIDs of the runs the runner's pool holds ready, by PID (children of its slots, with a pool UID)."""
    found = {}
    for slot in server.handlers():
        for pid in children_of(slot):
            uid = process_uid(pid)
            if uid is not None and 10000 <= uid <= 10999:
                found[pid] = uid
    return found


def test_pool_prepared_run_is_not_served_after_a_switch(rt):
    gen1 = rt.make_generation('python3', 1, python_module('mymod', 'one'))
    rt.switch('python3', 1)
    code = 'import mymod, os\nprint(mymod.VALUE, os.getuid())\n'
    # enable_network, as Dify always asks: the pool prepares that kind of run (network on by default).
    # One prepared python3 run and no preloads: the test follows that one run's generation.
    server = start_server(env={'DIFYSANDBOX_RUNTIME_DIR': str(rt.path), 'DIFYSANDBOX_POOL_SIZE_PYTHON3': '1',
                               'DIFYSANDBOX_POOL_SIZE_NODEJS': '0', 'DIFYSANDBOX_POOL_PRELOAD_PYTHON3': ''})
    try:
        with requests.Session() as s:
            r = server.run(code, session=s, enable_network=True)
            assert r.status_code == 200 and r.json()['code'] == 0, (r.status_code, r.text)
            assert r.json()['data']['stdout'].split()[0] == 'one', r.text
            # The pool's prepared run waits, holding generation 1.
            assert wait_held(gen1, timeout=10), 'no prepared run holds generation 1: nothing is tested'
            rt.make_generation('python3', 2, python_module('mymod', 'two'))
            rt.switch('python3', 2)
            r = server.run(code, session=s, enable_network=True)
            assert r.status_code == 200 and r.json()['code'] == 0, (r.status_code, r.text)
            assert r.json()['data']['stdout'].split()[0] == 'two', 'a prepared run served a stale generation'
            # The stale prepared run is gone with its lock; the next one holds generation 2 and is used.
            gen2 = rt.generation('python3', 2)
            assert wait_held(gen2, timeout=10), 'no prepared run of generation 2'
            deadline = time.monotonic() + 10
            while held(gen1) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not held(gen1), 'the stale prepared run still holds generation 1'
            deadline = time.monotonic() + 10
            while not _prepared_runs(server) and time.monotonic() < deadline:
                time.sleep(0.05)  # the lock comes first, the run's UID after its set-up
            time.sleep(0.2)
            prepared = _prepared_runs(server)
            assert len(prepared) == 1, prepared
            r = server.run(code, session=s, enable_network=True)
            value, uid = r.json()['data']['stdout'].split()
            assert value == 'two' and int(uid) == list(prepared.values())[0], \
                f'the prepared run of the current generation was not used: {r.text} vs {prepared}'
    finally:
        rc = server.stop()
        server.cleanup()
    assert rc == 0
    assert not held(gen1) and not held(rt.generation('python3', 2)), 'a stopped server still holds a generation'


# --------------------------------------------------------------------------- without a generation

def test_without_a_generation_runs_work_as_before(rt):
    mount_listing = f'import os\nprint(os.listdir("{MOUNT}"))\n'
    # No packages directory at all, then one without `current` (an installer that never finished).
    for step in ('no packages directory', 'no current'):
        if step == 'no current':
            rt.make_generation('python3', 1, python_module('mymod', 'unfinished'))
            rt.make_generation('nodejs', 1, node_package('mypkg', 'unfinished'))
        out = ok(rt.run(mount_listing + 'try:\n    import mymod\nexcept ModuleNotFoundError as e:\n'
                        '    print(type(e).__name__)\nprint(1 + 1)\n'))
        assert out == '[]\nModuleNotFoundError\n2\n', (step, out)
        out = ok(rt.run('try { require("mypkg"); } catch (e) { console.log(e.code); }\n'
                        f'console.log(require("fs").readdirSync("{MOUNT}").length, 1 + 1);\n', 'nodejs'))
        assert out == 'MODULE_NOT_FOUND\n0 2\n', (step, out)


@pytest.mark.parametrize('broken', ['missing', 'a file', 'a symlink'])
def test_a_tree_without_the_mount_point_fails_closed(rt, broken):
    """Trees built before the mount point existed (or with something else there): with a generation, no run
    starts and the operator is told to rebuild the tree; without one, runs go on."""
    tree = Path(os.path.realpath(rt.path / 'python3' / 'current'))
    mount_point = tree / MOUNT.lstrip('/')
    hidden = mount_point.with_name(mount_point.name + '.hidden-by-test')
    os.rename(mount_point, hidden)
    try:
        if broken == 'a file':
            mount_point.write_text('')
        elif broken == 'a symlink':
            os.symlink('/tmp', mount_point)  # the mount would follow it on the host
        assert ok(rt.run('print("no generation, no mount")\n')) == 'no generation, no mount\n'
        rt.make_generation('python3', 1, python_module('mymod', 'x'))
        rt.switch('python3', 1)
        code = 'print("DIFYSANDBOX-RAN")\n'
        rc, out, err = rt.run_failing(code)
        assert rc != 0 and 'DIFYSANDBOX-RAN' not in out, (rc, out, err)
        assert "step 'packages'" in err and 'difysandbox-prepare-runtime' in err and str(tree) in err, err
        assert not held(rt.generation('python3', 1))
        if broken != 'missing':
            return

        server = start_server(env={'DIFYSANDBOX_RUNTIME_DIR': str(rt.path)})
        try:
            r = server.run(code)
            body = r.json()
            assert r.status_code == 200 and body['code'] == -500 and body['data'] is None, r.text
            assert 'difysandbox-prepare-runtime' in body['message'] and 'packages' in body['message'], r.text
        finally:
            server.stop()
            server.cleanup()
    finally:
        if os.path.lexists(mount_point):
            os.unlink(mount_point)
        os.rename(hidden, mount_point)
