"""`difysandboxctl run FILE --language L` (DESIGN §4): a snippet through the same sandbox as the API,
for debugging on the host, without the manager."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import sandbox_env


def ctl_binary():
    return os.environ.get('DIFYSANDBOXCTL') or shutil.which('difysandboxctl') or '/usr/local/bin/difysandboxctl'


def ctl(*args, stdin=''):
    return subprocess.run([ctl_binary(), *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=sandbox_env())


@pytest.mark.parametrize('language,code,expected', [
    ('python3', 'print(6 * 7)', '42\n'),
    ('nodejs', 'console.log(6 * 7)', '42\n'),
])
def test_run_from_stdin_goes_through_the_sandbox(language, code, expected):
    p = ctl('run', '-', '--language', language, stdin=code)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out['stdout'] == expected and out['result'] == 'ok', out
    assert out['uid'] >= 10000  # a pool UID: the sandbox, not the caller


def test_run_of_a_file_is_confined_like_a_request(tmp_path):
    script = tmp_path / 'snippet.py'
    script.write_text('import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)\n')  # ptrace
    p = ctl('run', str(script), '--language', 'python3')
    out = json.loads(p.stdout)
    assert out['result'] == 'seccomp' and out['refused_calls'] == ['ptrace'], out


def test_run_needs_a_language():
    p = ctl('run', '-', stdin='print(1)')
    assert p.returncode == 2
    assert "'run' needs --language" in p.stderr
