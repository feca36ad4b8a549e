"""Stale run cgroups (issue 12, the soak's leak): a run cgroup whose UID nobody holds was left by a holder
that was killed. The sweep at start removes those it finds then; one whose run was still exiting at
that moment (a server SIGKILLed mid-run and restarted at once) must be removed later all the same,
by the runner's periodic sweep, and in every hierarchy where it is left."""

import os
import subprocess
import threading
import time

from conftest import cgroup_bases
from serve_helpers import start_server
from test_neighbours import config, wait_for_run_process

RANGE = (14780, 14789)  # outside the other suites' ranges: a live neighbour's range is refused


def cgroup_name_of(pid, controller):
    with open(f'/proc/{pid}/cgroup') as f:
        for line in f:
            _, ctrls, path = line.rstrip('\n').split(':', 2)
            if controller in ctrls.split(','):
                return os.path.basename(path)
    raise AssertionError(f'process {pid} has no {controller} cgroup')


def test_a_stale_run_cgroup_found_after_start_is_swept(tmp_path_factory):
    bases = cgroup_bases()
    server = start_server(config(tmp_path_factory, 'stale', RANGE, worker_timeout=30))
    sleeper, paths = None, []
    try:
        # This instance's run cgroup names, learnt from a live run: run-<instance>-<uid>.
        box = {}
        t = threading.Thread(target=lambda: box.update(r=server.run("import time\ntime.sleep(2)\n")))
        t.start()
        name = cgroup_name_of(wait_for_run_process(server, RANGE), 'memory')
        t.join(60)
        assert box['r'].json()['data']['error'] == '', box['r'].text
        instance = name.rsplit('-', 1)[0]
        assert instance.startswith('run-'), name

        # What the soak found after a server kill: a run cgroup of a free UID in the memory and cpu
        # hierarchies (pids already gone), its last process still there. The process is one this test
        # started; the pool is off (prewarm false), so nothing else takes the UID meanwhile.
        sleeper = subprocess.Popen(['sleep', '60'])
        for controller in ('memory', 'cpu'):
            path = os.path.join(bases[controller], f'{instance}-{RANGE[1]}')
            os.mkdir(path)
            paths.append(path)
            with open(os.path.join(path, 'cgroup.procs'), 'w') as f:
                f.write(str(sleeper.pid))

        deadline = time.monotonic() + 15
        while any(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in paths if os.path.exists(p)], server.log_text()
        assert sleeper.wait(timeout=5) == -9  # killed by the sweep, as a stale run's process is
    finally:
        if sleeper and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        for p in paths:
            for _ in range(100):  # the killed process leaves its cgroup a moment after it is reaped
                try:
                    os.rmdir(p)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        server.stop()
        server.cleanup()
