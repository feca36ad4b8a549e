"""A run whose sandbox cannot be made says where and why: the step and the kernel's own reason, whatever
step of the child failed (issue 12: honest results; issue 15: one error vocabulary)."""

import subprocess

def test_a_child_step_after_the_release_reports_its_own_errno(tmp_path):
    """A step of the child after the parent released it (here rlimits: raising RLIMIT_NOFILE above the
    hard limit without CAP_SYS_RESOURCE) must report the kernel's reason. The errno was read after the
    child's report had been cleared, so every such failure said 'Input/output error'."""
    from conftest import sandbox_binary, sandbox_env
    config = tmp_path / 'config.yaml'
    config.write_text('open_files_max: 4096\n')
    proc = subprocess.run(['prlimit', '--nofile=1024:2048', 'setpriv', '--bounding-set', '-sys_resource',
                           '--inh-caps', '-all', '--', sandbox_binary(), '--config', str(config), 'run',
                           '--language', 'python3', '-'], input=b'print(1)\n', stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=sandbox_env(), timeout=120)
    out = proc.stdout.decode('utf-8', 'replace') + proc.stderr.decode('utf-8', 'replace')
    assert proc.returncode != 0, out
    assert "step 'rlimits'" in out and 'Operation not permitted' in out, out
