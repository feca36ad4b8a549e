"""Shared helpers for the integration suite: run snippets through the real `difysandbox run`, load the
escape corpus (tests/escape), and inspect the host for anything a run left behind.

Run with Debian's pytest:  /usr/bin/python3 -m pytest -q tests/integration
The binary is $DIFYSANDBOX, else `difysandbox` on PATH, else /usr/local/bin/difysandbox.
"""

import dataclasses
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ESCAPE_DIR = REPO / 'tests' / 'escape'

# Never written literally anywhere in the corpus: a run that prints it has done what its case forbids.
MARKER = 'DIFYSANDBOX-' + 'ESCAPED'

# Put into the environment of every `difysandbox run`; neither its name nor its value may reach a run.
CANARY_NAME = 'DIFYSANDBOX_TEST_CANARY'
CANARY_VALUE = 'canary-' + uuid.uuid4().hex

LANGUAGES = ('python3', 'nodejs')
LANGUAGE_DIRS = {'python': 'python3', 'nodejs': 'nodejs'}
EXTENSIONS = {'python3': '.py', 'nodejs': '.js'}
RESULTS = {'ok', 'error', 'timeout', 'memory', 'seccomp', 'output-truncated'}
JSON_KEYS = {'stdout', 'stderr', 'error', 'exit_code', 'result', 'duration_ms', 'cpu_ms', 'memory_peak', 'uid'}

UID_MIN, UID_MAX = 10000, 10999
STATE_DIR = Path('/run/difysandbox')
RUNTIME_DIR = Path('/var/lib/difysandbox')
CGROUP_CONTROLLERS = ('memory', 'pids', 'cpu')

# The error line each non-plain result adds after "process exited with code N".
RESULT_LINES = {
    'timeout': 'error: timeout',
    'seccomp': 'error: operation not permitted',
    'memory': 'error: memory limit exceeded',
    'output-truncated': 'error: output limit exceeded',
}


def sandbox_binary():
    return os.environ.get('DIFYSANDBOX') or shutil.which('difysandbox') or '/usr/local/bin/difysandbox'


def sandbox_env():
    env = dict(os.environ)
    env[CANARY_NAME] = CANARY_VALUE
    return env


def command(language, options=(), file='-'):
    return [sandbox_binary(), 'run', '--language', language, *options, file]


def _clip(text, limit=1500):
    if len(text) <= limit:
        return text
    return text[:limit // 2] + f'\n... [{len(text) - limit} characters cut] ...\n' + text[-limit // 2:]


class RunResult(dict):
    """The parsed JSON of one run, plus the raw streams of the `difysandbox run` process."""

    raw_stdout = ''
    raw_stderr = ''
    wall = 0.0

    def show(self):
        shown = {k: (_clip(v) if isinstance(v, str) else v) for k, v in self.items()}
        text = json.dumps(shown, indent=1, ensure_ascii=False)
        if self.raw_stderr:
            text += '\n--- difysandbox stderr ---\n' + _clip(self.raw_stderr)
        return '\n' + text


def parse_output(stdout, stderr, returncode, wall=0.0):
    """Checks the process exit status and that stdout is exactly one JSON object; returns RunResult."""
    assert returncode == 0, (f'difysandbox run exited {returncode} (a sandbox failure, not a result)\n'
                             f'stderr: {_clip(stderr)}\nstdout: {_clip(stdout)}')
    decoder = json.JSONDecoder()
    text = stdout.lstrip()
    try:
        obj, end = decoder.raw_decode(text)
    except json.JSONDecodeError as e:
        raise AssertionError(f'stdout is not JSON ({e}): {_clip(stdout)}\nstderr: {_clip(stderr)}')
    assert text[end:].strip() == '', f'stdout holds more than one JSON object: {_clip(text[end:])}'
    assert isinstance(obj, dict), f'stdout is JSON but not an object: {_clip(stdout)}'
    res = RunResult(obj)
    res.raw_stdout, res.raw_stderr, res.wall = stdout, stderr, wall
    missing = JSON_KEYS - set(obj)
    assert not missing, f'JSON lacks {sorted(missing)}' + res.show()
    assert obj['result'] in RESULTS, f'unknown result {obj["result"]!r}' + res.show()
    assert CANARY_VALUE not in stdout and CANARY_VALUE not in stderr, \
        'the canary of the test runner\'s environment reached the run' + res.show()
    return res


def run_snippet(code, language='python3', options=(), timeout=180):
    """Runs code through `difysandbox run` and returns the parsed JSON (a RunResult)."""
    if isinstance(code, str):
        code = code.encode()
    start = time.monotonic()
    proc = subprocess.run(command(language, options), input=code, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=sandbox_env(), timeout=timeout)
    wall = time.monotonic() - start
    return parse_output(_utf8(proc.stdout, proc.stderr), proc.stderr.decode('utf-8', 'replace'), proc.returncode, wall)


def _utf8(stdout, stderr):
    """JSON is UTF-8 (RFC 8259): whatever bytes a run printed, the object on stdout must decode strictly."""
    try:
        return stdout.decode('utf-8')
    except UnicodeDecodeError as e:
        raise AssertionError(f'stdout of difysandbox run is not valid UTF-8 ({e}): {_clip(repr(stdout))}\n'
                             f'stderr: {_clip(stderr.decode("utf-8", "replace"))}')


def start_snippet(code, language='python3', options=()):
    """Starts a run without waiting; finish it with finish_snippet()."""
    proc = subprocess.Popen(command(language, options), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=sandbox_env())
    proc.started = time.monotonic()
    proc.stdin.write(code.encode() if isinstance(code, str) else code)
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again
    return proc


def finish_snippet(proc, timeout=180):
    out, err = proc.communicate(timeout=timeout)
    return parse_output(_utf8(out, err), err.decode('utf-8', 'replace'), proc.returncode,
                        time.monotonic() - proc.started)


REFUSAL_LINE = re.compile(r'error: (system call \S+ is (not allowed in this sandbox and failed with \S+ \(see '
                          r'allowed_syscalls in difysandbox\.conf\(5\)\)|never allowed in this sandbox[^\n]*)'
                          r'|killed by SIGSYS: [^\n]*)\n')


def contract_problems(res):
    """How the JSON breaks the result/error contract of difysandbox(8) and DESIGN.md §1, as a list."""
    problems = []
    code, result, error, stderr = res['exit_code'], res['result'], res['error'], res['stderr']
    if code == 0:
        if error != '':
            problems.append(f'exit 0 but error is {error!r}')
        if result != 'ok':
            problems.append(f'exit 0 but result {result!r}')
        return problems
    head = f'process exited with code {code}\n'
    if not error.startswith(head):
        problems.append(f'error does not start with {head!r}')
        return problems
    rest = error[len(head):]
    line = RESULT_LINES.get(result)
    signal_line = f'error: killed by signal {code - 128}\n'
    if result == 'error' and code > 128 and rest.startswith(signal_line):
        # a signal nothing of the sandbox's explains (a crash, the host's own refusal): result.c names it
        # (an exit(130) of the code itself has no such line)
        rest = rest[len(signal_line):]
    if line:
        if not rest.startswith(line + '\n'):
            problems.append(f'result {result} but the error line {line!r} does not follow')
        else:
            rest = rest[len(line) + 1:]
    elif result == 'ok':
        problems.append(f'exit {code} but result ok')
    for other in RESULT_LINES.values():
        if rest.startswith(other):
            problems.append(f'error says {other!r} but result is {result!r}')
    # The calls the filters refused, named (src/sandbox/refusals.c), between the result's line and stderr.
    while True:
        m = REFUSAL_LINE.match(rest)
        if not m:
            break
        rest = rest[m.end():]
    if rest != stderr:
        problems.append('the error does not end with the stderr text')
    if result == 'seccomp' and code != 159:
        problems.append(f'seccomp kill but exit code {code} (expected 128+SIGSYS = 159)')
    return problems


# ------------------------------------------------------------------------------------------- corpus

@dataclasses.dataclass
class Case:
    language: str
    name: str
    path: Path
    expect: frozenset
    options: tuple
    attack: str
    code: str
    host_probe: str = ''

    @property
    def id(self):
        return f'{self.language}/{self.name}'


def parse_case(path, language):
    text = path.read_text()
    prefix = '#' if language == 'python3' else '//'
    header = {}
    for line in text.splitlines():
        if not line.startswith(prefix):
            break
        m = re.match(re.escape(prefix) + r'\s*([a-z-]+):\s*(.*)$', line)
        if m:
            header[m.group(1)] = m.group(2).strip()
    expect = frozenset(v.strip() for v in header.get('expect-result', '').split('|') if v.strip())
    return Case(language=language, name=path.stem, path=path, expect=expect,
                options=tuple(header.get('options', '').split()), attack=header.get('attack', ''), code=text,
                host_probe=header.get('host-probe', ''))


def load_corpus():
    cases = []
    for dirname, language in sorted(LANGUAGE_DIRS.items()):
        for path in sorted((ESCAPE_DIR / dirname).glob('*' + EXTENSIONS[language])):
            cases.append(parse_case(path, language))
    return cases


# ----------------------------------------------------------------------------------- host probes

# A case whose header says `host-probe: NAME` attacks through a door that some hosts close before the
# sandbox is asked (tests/escape/README.md). Each probe runs the case's instruction once, outside the
# sandbox, with a harmless call, and tells whether the host itself refuses it.
HOST_PROBES = {
    # i386 getpid (eax=20) through `int $0x80`, from an anonymous RWX page, as the int80_* cases do.
    'int80': '''
import ctypes, mmap
page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(bytes.fromhex('b814000000cd804863c0c3'))  # mov eax,20; int 0x80; movsxd rax,eax; ret
fn = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
print(fn())
''',
}
HOST_REFUSALS = (signal.SIGSEGV, signal.SIGILL)
_host_probe_results = {}


def host_refusal(probe):
    """The signal (SIGSEGV or SIGILL) with which this host kills a process that tries the probe's call
    outside any sandbox, or None where the host lets the call through. Probed once per name."""
    if probe not in _host_probe_results:
        assert probe in HOST_PROBES, f'unknown host-probe {probe!r} (known: {sorted(HOST_PROBES)})'
        p = subprocess.run(['/usr/bin/python3', '-c', HOST_PROBES[probe]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        if p.returncode < 0 and -p.returncode in HOST_REFUSALS:
            _host_probe_results[probe] = signal.Signals(-p.returncode)
        else:
            assert p.returncode == 0 and p.stdout.strip().lstrip('-').isdigit(), \
                f'host probe {probe!r} neither worked nor was refused: rc {p.returncode}, {p.stdout!r} {p.stderr!r}'
            _host_probe_results[probe] = None
    return _host_probe_results[probe]


def pytest_terminal_summary(terminalreporter):
    refused = {k: v for k, v in _host_probe_results.items() if v is not None}
    for probe, sig in sorted(refused.items()):
        terminalreporter.write_line(f'host-probe {probe}: this host itself kills the call with {sig.name}, so '
                                    f'its escape cases accepted that signal instead of the seccomp kill')


# ------------------------------------------------------------------------------------- host state

def pool_processes():
    """{pid: (uid, description)} of every host process with a real, effective, saved or fs UID in the pool."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/status') as f:
                status = f.read()
        except OSError:
            continue
        m = re.search(r'^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)', status, re.M)
        if not m:
            continue
        uids = [int(x) for x in m.groups()]
        pool = [u for u in uids if UID_MIN <= u <= UID_MAX]
        if pool:
            field = lambda key: (re.search(rf'^{key}:\s*(.*)$', status, re.M) or [None, '?'])[1]
            found[int(entry)] = (pool[0], f'pid {entry} {field("Name")} uids {uids} ppid {field("PPid")} '
                                          f'state {field("State")}')
    return found


def children_of(ppid):
    """PIDs whose parent is ppid."""
    kids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as f:
                    if int(f.read().rsplit(')', 1)[1].split()[1]) == ppid:
                        kids.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def _mountinfo():
    with open('/proc/self/mountinfo') as f:
        return [line.split() for line in f]


def cgroup_bases():
    """{controller: <mount><own cgroup>/difysandbox} for the v1 memory, pids and cpu hierarchies."""
    own = {}
    with open('/proc/self/cgroup') as f:
        for line in f:
            _, ctrls, path = line.rstrip('\n').split(':', 2)
            for c in ctrls.split(','):
                own[c] = path
    bases = {}
    for fields in _mountinfo():
        dash = fields.index('-')
        fstype, super_opts = fields[dash + 1], fields[dash + 3]
        if fstype != 'cgroup':
            continue
        for c in CGROUP_CONTROLLERS:
            if c in super_opts.split(',') and c in own:
                root, mountpoint = fields[3], fields[4]
                rel = own[c]
                if root != '/' and rel.startswith(root):
                    rel = rel[len(root):]
                bases[c] = os.path.normpath(mountpoint + '/' + rel.lstrip('/')) + '/difysandbox'
    return bases


def is_run_cgroup_of(path, uid):
    """Whether path is the run cgroup of uid: run-<instance>-<uid> (instance: 16 hex digits of a hash of
    the state_dir, cgroup.h), or run-<uid> as before instances had names."""
    return re.fullmatch(rf'run-(?:[0-9a-f]{{16}}-)?{uid}', os.path.basename(path)) is not None


def run_cgroups():
    """{path: [pids]} of every run-* cgroup under our difysandbox cgroups (and the hierarchy roots')."""
    found = {}
    bases = set(cgroup_bases().values())
    for c in CGROUP_CONTROLLERS:  # a run started from another cgroup may live at the root's
        bases.add(f'/sys/fs/cgroup/{c}/difysandbox')
    for base in bases:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if not name.startswith('run-'):
                continue
            path = os.path.join(base, name)
            try:
                with open(os.path.join(path, 'cgroup.procs')) as f:
                    pids = f.read().split()
            except OSError:
                pids = []
            found[path] = pids
    return found


def held_uid_locks():
    """UIDs whose lock file in /run/difysandbox/uids is held by someone."""
    held = []
    try:
        names = os.listdir(STATE_DIR / 'uids')
    except FileNotFoundError:
        return held
    for name in names:
        try:
            fd = os.open(STATE_DIR / 'uids' / name, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(name)
        finally:
            os.close(fd)
    return sorted(held)


def uid_lock_free(uid):
    path = STATE_DIR / 'uids' / str(uid)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def runtime_trees():
    trees = set()
    for language in LANGUAGES:
        try:
            trees.add(os.path.realpath(RUNTIME_DIR / language / 'current'))
        except OSError:
            pass
    return sorted(trees)


def sandbox_mounts():
    """Host mounts whose mount point names difysandbox or lies in a runtime tree."""
    trees = runtime_trees()
    bad = []
    for fields in _mountinfo():
        mountpoint = fields[4]
        if 'difysandbox' in mountpoint or any(mountpoint == t or mountpoint.startswith(t + '/') for t in trees):
            bad.append(' '.join(fields))
    return bad


def tree_tmp_contents():
    """What is in the runtime trees' own tmp directories on the host (a run's /tmp must be a tmpfs)."""
    found = []
    for tree in runtime_trees():
        try:
            found += [os.path.join(tree, 'tmp', n) for n in os.listdir(os.path.join(tree, 'tmp'))]
        except OSError:
            pass
    return found


@dataclasses.dataclass
class HostSnapshot:
    processes: dict
    cgroups: dict
    locks: list
    mounts: list
    tree_tmp: list


def host_snapshot():
    return HostSnapshot(pool_processes(), run_cgroups(), held_uid_locks(), sandbox_mounts(), tree_tmp_contents())


def leftovers(before, after, uid):
    """What the run with this UID left on the host once `difysandbox run` had returned: a process with its
    UID, a run-<uid> cgroup (in the memory, pids or cpu hierarchy), its UID lock still held, a new host
    mount of the sandbox, a new file in a runtime tree's own tmp directory.

    Processes, cgroups and the lock are looked for by the run's UID, not as "anything in the pool": a run
    has one UID, so that finds all it could leave, and runs of other suites going on at the same time on
    this machine (with state directories of their own) cannot make a case fail.
    """
    problems = []
    procs = [d for u, d in after.processes.values() if u == uid]
    if procs:
        problems.append('processes of the run remain: ' + '; '.join(procs))
    cgroups = {c: pids for c, pids in after.cgroups.items() if is_run_cgroup_of(c, uid)}
    if cgroups:
        problems.append(f'run cgroups remain (with their processes): {cgroups}')
    if str(uid) in after.locks:
        problems.append(f'the lock of UID {uid} is still held after its run')
    new_mounts = sorted(set(after.mounts) - set(before.mounts))
    if new_mounts:
        problems.append(f'host mounts of the sandbox: {new_mounts}')
    new_tmp = sorted(set(after.tree_tmp) - set(before.tree_tmp))
    if new_tmp:
        problems.append(f'files written into a runtime tree\'s tmp directory on the host: {new_tmp}')
    return problems


# ------------------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope='session')
def sandbox_bin():
    path = sandbox_binary()
    assert os.access(path, os.X_OK), f'no difysandbox binary at {path}'
    return path


@pytest.fixture
def run(sandbox_bin):
    """run(code, language='python3', options=()) -> parsed JSON of the run (see run_snippet)."""
    return run_snippet


@pytest.fixture(scope='session')
def corpus():
    return load_corpus()
