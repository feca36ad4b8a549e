"""`difysandbox check-config FILE`: the configuration an operator gets, end to end through the real binary.

An upstream dify-sandbox config.yaml loads unchanged; a bad file is refused with a non-zero exit status and
a message naming file:line, key, value and reason; the upstream environment overrides win over the file.
Each run gets a clean environment (PATH only, plus what the test sets), so the host's proxy variables and
the like cannot leak in, and FILE alone is read: /etc/difysandbox/config.d is not.

The binary is conftest's (sandbox_bin: $DIFYSANDBOX, else `difysandbox` on PATH). Needs no root.
"""

import json
import os
import platform
import subprocess
import urllib.error
import urllib.request

import pytest

# Upstream writes allowed_syscalls as numbers of the machine it runs on: read and write.
SYSCALL_NUMBERS = {"x86_64": (0, 1), "aarch64": (63, 64)}

UPSTREAM_YAML = """\
app:
  port: 8194
  debug: True
  key: dify-sandbox
max_workers: 4
max_requests: 50
worker_timeout: 5
python_path: /usr/local/bin/python3
python_lib_path:
  - "/usr/local/lib/python3.10"
  - "/usr/lib/python3.10"
  - "/usr/lib/python3"
  - "/usr/lib/x86_64-linux-gnu"
  - "/etc/ssl/certs/ca-certificates.crt"
  - "/etc/nsswitch.conf"
  - "/etc/hosts"
  - "/etc/resolv.conf"
  - "/run/systemd/resolve/stub-resolv.conf"
  - "/run/resolvconf/resolv.conf"
  - "/etc/localtime"
  - "/usr/share/zoneinfo"
  - "/etc/timezone"
python_pip_mirror_url: https://pypi.tuna.tsinghua.edu.cn/simple
python_deps_update_interval: 30m
nodejs_path: /usr/local/bin/node
enable_network: True # please make sure there is no network risk in your environment
enable_preload: False # please keep it as False for security purposes
allowed_syscalls: # please leave it empty if you have no idea how seccomp works
{syscalls}proxy:
  socks5: ''
  http: ''
  https: ''
"""


@pytest.fixture
def check_config(sandbox_bin):
    """check_config(path, env=None, show_secrets=False) -> the CompletedProcess of `check-config path`."""

    def run(path, env=None, show_secrets=False):
        clean_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        clean_env.update(env or {})
        args = [sandbox_bin, "check-config"] + (["--show-secrets"] if show_secrets else []) + [str(path)]
        return subprocess.run(args, env=clean_env, capture_output=True, text=True, timeout=30)

    return run


def parse_output(stdout):
    """The "key: value" lines of check-config; quoted strings and lists are JSON-compatible here."""
    values = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition(": ")
        assert sep, f"not a 'key: value' line: {line!r}"
        assert key not in values, f"{key} printed twice"
        values[key] = json.loads(value) if value[:1] in ('"', "[") else value
    return values


def upstream_file(tmp_path):
    numbers = SYSCALL_NUMBERS.get(platform.machine())
    syscalls = "".join(f"  - {n}\n" for n in numbers) if numbers else ""
    # Upstream's image has its interpreters in /usr/local/bin; check-config requires that they exist, so
    # the file names stand-ins of the same names under tmp_path.
    bindir = tmp_path / "usr/local/bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name in ("python3", "node"):
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    path = tmp_path / "config.yaml"
    path.write_text(UPSTREAM_YAML.format(syscalls=syscalls).replace("/usr/local/bin/", f"{bindir}/"))
    return path, ["read", "write"] if numbers else []


def test_upstream_file_loads(check_config, tmp_path):
    path, syscalls = upstream_file(tmp_path)
    result = check_config(path)
    assert result.returncode == 0, result.stderr
    values = parse_output(result.stdout)
    assert values["app.port"] == "8194"
    assert values["app.debug"] == "true"
    assert values["app.key"] == "<set>"  # secrets stay hidden without --show-secrets
    assert "dify-sandbox" not in result.stdout
    assert values["max_workers"] == "4"
    assert values["max_requests"] == "50"
    assert values["worker_timeout"] == "5"
    assert values["python_path"] == f"{tmp_path}/usr/local/bin/python3"
    assert values["python_pip_mirror_url"] == "https://pypi.tuna.tsinghua.edu.cn/simple"
    assert values["python_deps_update_interval"] == "30m"
    assert values["nodejs_path"] == f"{tmp_path}/usr/local/bin/node"
    assert values["enable_network"] == "true"
    assert values["enable_preload"] == "false"
    assert values["allowed_syscalls"] == syscalls
    assert values["proxy.socks5"] == values["proxy.http"] == values["proxy.https"] == ""
    assert "python_lib_path" not in values  # accepted for upstream's sake, not kept
    # Our keys were not in the file: their defaults (difysandbox.conf(5)).
    assert values["memory_max"] == "512M"
    assert values["cpu_quota"] == "100%"
    assert values["uid_min"] == "10000" and values["uid_max"] == "10999"


def test_output_loads_back_the_same(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)
    first = check_config(path, show_secrets=True)
    assert first.returncode == 0, first.stderr
    assert parse_output(first.stdout)["app.key"] == "dify-sandbox"
    printed = tmp_path / "printed.yaml"
    printed.write_text(first.stdout)
    second = check_config(printed, show_secrets=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


@pytest.mark.parametrize(
    "text, message",
    [
        ("app:\n  port: 8194\n# upstream hangs on this\nmax_workers: 0\n",
         ":4: max_workers: '0': must be at least 1"),
        ("app:\n  port: 70000\n", ":2: app.port: '70000': must be between 1 and 65535"),
        ("max_wrokers: 4\n", ":1: max_wrokers: unknown key"),
        ("allowed_syscalls:\n  - read\n  - ptrace\n",
         ":3: allowed_syscalls: 'ptrace': never allowed: reaches into other processes"),
        ("memory_max: 1K\n", ":1: memory_max: '1K': must be at least 16M"),
        ("app:\n  port: 8194\n key: x\n", ":3: malformed YAML: did not find expected key"),
        # issue 12: what an outside review found accepted
        ("max_workers: 30000\n", ":1: max_workers: '30000': must be at most 1024"),
        ("max_requests: 4294967295\n", ":1: max_requests: '4294967295': must be at most 16384"),
        ("worker_timeout: 4294967296\n", ":1: worker_timeout: '4294967296': must be at most 3600s"),
        ("max_workers: !custom 4\n", ":1: max_workers: '!custom': unknown YAML tag"),
        ("python_path: /nonexistent/bin/python3\n",
         ":1: python_path: '/nonexistent/bin/python3': cannot use the interpreter: No such file or directory"),
        ("proxy:\n  http: x\n", ":2: proxy.http: 'x': unsupported proxy"),
    ],
)
def test_bad_file_refused(check_config, tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    result = check_config(path)
    assert result.returncode != 0
    assert result.stdout == ""
    assert f"{path}{message}" in result.stderr


def test_every_error_of_a_file_is_reported(check_config, tmp_path):
    """Issue 14: one check-config run lists every error (file, line, key, value, reason), not just the
    first; keys after a bad value or shape are still read, and the environment's too."""
    path = tmp_path / "config.yaml"
    path.write_text(
        "app:\n"
        "  port: 70000\n"  # 2: out of range, inside a section
        "  debug: maybe\n"  # 3: not a boolean
        "max_wrokers: 4\n"  # 4: unknown key, whose value is skipped
        "unknown_section:\n"  # 5: unknown key with a mapping under it
        "  a: [1, 2]\n"
        "max_requests: [1, 2]\n"  # 7: a list where a number belongs
        "allowed_syscalls:\n"
        "  - {a: b}\n"  # 9: a mapping in a list
        "  - read\n"
        "worker_timeout: abc\n"  # 11: not a duration
        "enable_network: true\n"  # fine
    )
    result = check_config(path, {"MAX_WORKERS": "0"})
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    expected = [
        f"{path}:2: app.port: '70000': must be between 1 and 65535",
        f"{path}:3: app.debug: 'maybe': expected a boolean",
        f"{path}:4: max_wrokers: unknown key",
        f"{path}:5: unknown_section: unknown key",
        f"{path}:7: max_requests: expected a single value, got a list",
        f"{path}:9: allowed_syscalls: expected a list of system call names or numbers, found a mapping in it",
        f"{path}:11: worker_timeout: 'abc': expected a duration",
        "environment variable MAX_WORKERS: max_workers: '0': must be at least 1",
    ]
    assert len(lines) == len(expected) + 1, result.stderr
    for line, start in zip(lines, expected):
        assert line.startswith(start), (line, start)
    assert lines[-1] == f"{len(expected)} errors, the configuration is refused"
    assert not any(line.startswith("<") for line in lines), "no syslog priority prefix on a pipe"


def test_malformed_yaml_still_reports_the_errors_before_it(check_config, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("max_workers: 0\napp:\n  port: 8194\n key: x\n")
    result = check_config(path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"{path}:1: max_workers: '0': must be at least 1"
    assert lines[1].startswith(f"{path}:4: malformed YAML: did not find expected key")
    assert lines[2] == "2 errors, the configuration is refused"


def test_missing_file_refused(check_config, tmp_path):
    path = tmp_path / "nonexistent.yaml"
    result = check_config(path)
    assert result.returncode != 0
    assert str(path) in result.stderr and "No such file or directory" in result.stderr


def test_env_overrides_win(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)
    env = {
        "API_KEY": "from-environment",
        "MAX_WORKERS": "8",
        "SANDBOX_PORT": "9000",
        "ENABLE_NETWORK": "false",
        "HTTP_PROXY": "http://proxy:3128",
        "ALLOWED_SYSCALLS": "getpid",
        "DIFYSANDBOX_MEMORY_MAX": "1G",
    }
    result = check_config(path, env, show_secrets=True)
    assert result.returncode == 0, result.stderr
    values = parse_output(result.stdout)
    assert values["app.key"] == "from-environment"
    assert values["max_workers"] == "8"
    assert values["app.port"] == "9000"
    assert values["enable_network"] == "false"
    assert values["proxy.http"] == "http://proxy:3128"
    assert values["allowed_syscalls"] == ["getpid"]
    assert values["memory_max"] == "1G"


def test_empty_api_key_keeps_file_value(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)
    result = check_config(path, {"API_KEY": ""}, show_secrets=True)
    assert result.returncode == 0, result.stderr
    assert parse_output(result.stdout)["app.key"] == "dify-sandbox"


def test_env_proxy_without_scheme_refused(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)
    result = check_config(path, {"HTTP_PROXY": "proxy:3128"})
    assert result.returncode != 0
    assert result.stdout == ""
    assert "environment variable HTTP_PROXY: proxy.http: 'proxy:3128': unsupported proxy" in result.stderr


def test_env_max_workers_zero_refused(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)
    result = check_config(path, {"MAX_WORKERS": "0"})
    assert result.returncode != 0
    assert result.stdout == ""
    assert "environment variable MAX_WORKERS: max_workers: '0': must be at least 1" in result.stderr


# ------------------------------------------------------------------------ the key (issue 14, item 1)

def test_no_key_by_default_and_check_config_says_so(check_config, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("max_workers: 2\n")
    result = check_config(path)
    assert result.returncode == 0, result.stderr
    assert parse_output(result.stdout)["app.key"] == "<unset>"
    assert "app.key is not set: every request is refused with 401" in result.stderr
    shown = check_config(path, show_secrets=True)
    assert "app.key" not in parse_output(shown.stdout)  # nothing to show: no default key
    assert "dify-sandbox" not in shown.stdout


def test_public_key_works_only_written_out_and_is_warned_about(check_config, tmp_path):
    path, _ = upstream_file(tmp_path)  # upstream's file says `key: dify-sandbox`
    result = check_config(path, show_secrets=True)
    assert result.returncode == 0, result.stderr
    assert parse_output(result.stdout)["app.key"] == "dify-sandbox"
    assert "upstream's well-known default" in result.stderr


def test_serve_without_a_key_refuses_every_request(tmp_path):
    from serve_helpers import start_server

    server = start_server(config={"app.key": None, "max_workers": 1})
    try:
        body = json.dumps({"language": "python3", "code": "print(1)"}).encode()
        for headers in ({"X-Api-Key": "dify-sandbox"}, {"X-Api-Key": ""}, {}):
            req = urllib.request.Request(server.url + "/v1/sandbox/run", data=body, method="POST",
                                         headers={"Content-Type": "application/json", **headers})
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=30)
            assert e.value.code == 401, headers
    finally:
        server.stop()
        server.cleanup()
