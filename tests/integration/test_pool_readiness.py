"""A slot of the warm pool is offered only once its interpreter waits for its code, its pool_preload
modules imported. It used to be offered as soon as the interpreter started, and a request handed it
waited for the imports: 70 of 360 warm runs of print(1) took 200-480 ms, all of it pandas being imported
(docs/performance.md). Here the preload is a module of a private dependency generation that spends
seconds of CPU when imported, so a request sent meanwhile shows which run it got by what it sees."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from serve_helpers import children_of, process_status, process_uid, start_server

REPO = Path(__file__).resolve().parents[2]
PREPARE_RUNTIME = REPO / 'scripts' / 'difysandbox-prepare-runtime'
UID_MIN, UID_MAX = 14800, 14809  # a range of its own: neighbours' ranges must not overlap
SLOW_SECONDS = 3  # CPU seconds: within the run's CPU limit (worker_timeout below), which preloads count in
SLOW_MODULE = f'''import time
_end = time.process_time() + {SLOW_SECONDS}
while time.process_time() < _end:  # CPU, as pandas' import is: not a sleep
    pass
'''
SEES = "import sys\nprint('dsb_slow_preload' in sys.modules)\n"


@pytest.fixture(scope='module')
def runtime_dir():
    path = tempfile.mkdtemp(prefix='difysandbox-pool-readiness-')
    os.chmod(path, 0o755)
    try:
        p = subprocess.run(['/usr/bin/python3', str(PREPARE_RUNTIME), '--runtime-dir', path, 'python3'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        assert p.returncode == 0, p.stdout.decode()
        gen = Path(path) / 'python3' / 'packages' / 'gen-1'
        (gen / 'python').mkdir(mode=0o755, parents=True)
        (gen / 'python' / 'dsb_slow_preload.py').write_text(SLOW_MODULE)
        (gen / 'python' / 'dsb_slow_preload.py').chmod(0o644)
        os.symlink('gen-1', gen.parent / 'current')
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def importing_slot(server):
    """The pid of the pool's python interpreter while it is busy importing (running, with CPU time)."""
    for slot in server.handlers():
        for pid in children_of(slot):
            uid = process_uid(pid)
            if uid is not None and UID_MIN <= uid <= UID_MAX and process_status(pid).get('State', '')[:1] == 'R':
                return pid
    return None


def test_a_slot_is_offered_only_once_its_preloads_are_imported(runtime_dir):
    server = start_server({'uid_min': UID_MIN, 'uid_max': UID_MAX, 'state_dir': tempfile.mkdtemp(),
                           'worker_timeout': 30},
                          env={'DIFYSANDBOX_RUNTIME_DIR': runtime_dir,
                               'DIFYSANDBOX_POOL_SIZE_PYTHON3': '1', 'DIFYSANDBOX_POOL_SIZE_NODEJS': '0',
                               'DIFYSANDBOX_POOL_PRELOAD_PYTHON3': 'dsb_slow_preload'})
    try:
        deadline = time.monotonic() + 60
        while not importing_slot(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert importing_slot(server), 'the pool never started importing its preload:\n' + server.log_text()

        # While the slot imports, a request gets a run made for it, which imports nothing beforehand.
        first = server.run(SEES, enable_network=True).json()['data']  # the kind the pool holds, as Dify sends
        assert first['error'] == '' and first['stdout'] == 'False\n', first

        # Once the import is done the slot is offered, and a request gets it, preload and all.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(1)  # a pause: the pool keeps preloaded slots only while requests pause
            data = server.run(SEES, enable_network=True).json()['data']
            assert data['error'] == '', data
            if data['stdout'] == 'True\n':
                break
        assert data['stdout'] == 'True\n', 'no request ever got the preloaded slot:\n' + server.log_text()
    finally:
        server.stop()
        server.cleanup()
