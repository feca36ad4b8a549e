"""The Prometheus endpoint (difysandbox-metrics.socket, served by the manager) against the real thing:
Debian's prometheus scrapes it inside the container, and what its HTTP API says after a known number of
runs, errors and refusals matches GetStats and the journal. promtool checks the exposition, the alert
rules, and every query of the Grafana dashboard runs on that Prometheus."""

import json
import os
import re
import threading
import time
import urllib.parse
import urllib.request

import pytest

from conftest import TOP, request
from test_manager import call, set_config, stats

METRICS_URL = "http://127.0.0.1:9194/metrics"
PROM_PORT = 19094  # the container shares the host's loopback: not Prometheus's usual 9090
PROM_UNIT = "difysandbox-test-prometheus"
RUN_FINISHED = "MESSAGE_ID=6b4c976ba6474881ab52fe04f0940326"
RULES = os.path.join(TOP, "examples", "prometheus", "difysandbox-alerts.yml")
DASHBOARD = os.path.join(TOP, "examples", "grafana", "difysandbox.json")
# The exporter's result names (docs/monitoring.md) for GetStats' names.
RESULT_LABEL = {"ok": "ok", "error": "error", "timeout": "timeout", "memory": "oom", "seccomp": "seccomp",
                "output-truncated": "output-truncated", "rejected": "refused"}


def scrape(path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:9194{path}", timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read().decode()


def parse(text):
    """{(name, frozenset(labels)): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def prom_query(expr):
    url = f"http://127.0.0.1:{PROM_PORT}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        answer = json.load(resp)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def prom_runs():
    """difysandbox_runs_total as Prometheus holds it: {(language, result): value}."""
    return {(s["metric"]["language"], s["metric"]["result"]): int(float(s["value"][1]))
            for s in prom_query("difysandbox_runs_total")}


def stats_runs(st):
    runs = {(lang, RESULT_LABEL[res]): n for lang, by in st["RunsByLanguage"].items() for res, n in by.items()}
    # Refused before the language was read: in RunsByResult's total, under no language.
    runs[("unknown", "refused")] = st["RunsByResult"]["rejected"] - sum(
        by["rejected"] for by in st["RunsByLanguage"].values())
    return runs


@pytest.fixture(scope="module")
def prometheus(container):
    # The container runs the host's /usr: Debian's prometheus comes from scripts/lib/setup.sh's list.
    if not os.path.exists("/usr/bin/prometheus") or not os.path.exists("/usr/bin/promtool"):
        pytest.fail("Debian's prometheus package is missing: apt-get install prometheus")
    config = ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
              f"rule_files: [{RULES}]\n"
              "scrape_configs:\n  - job_name: difysandbox\n    static_configs:\n"
              "      - targets: ['127.0.0.1:9194']\n")
    container.sh(f"systemctl stop {PROM_UNIT} 2>/dev/null; systemctl reset-failed {PROM_UNIT} 2>/dev/null; "
                 "rm -rf /var/tmp/difysandbox-prom && mkdir -p /var/tmp/difysandbox-prom && "
                 f"cat > /var/tmp/difysandbox-prom/prometheus.yml <<'EOF'\n{config}EOF", check=False)
    container.sh(f"systemd-run --unit={PROM_UNIT} /usr/bin/prometheus "
                 "--config.file=/var/tmp/difysandbox-prom/prometheus.yml "
                 "--storage.tsdb.path=/var/tmp/difysandbox-prom/data "
                 f"--web.listen-address=127.0.0.1:{PROM_PORT} --log.level=warn")
    try:
        deadline = time.time() + 60
        while True:
            try:
                up = prom_query('up{job="difysandbox"}')
                if up and up[0]["value"][1] == "1":
                    break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail("Prometheus never scraped difysandbox:\n" +
                            container.journal("-n", "50", "-u", PROM_UNIT, "-u", "difysandbox-manager"))
            time.sleep(0.5)
        yield
    finally:
        container.sh(f"systemctl stop {PROM_UNIT}; rm -rf /var/tmp/difysandbox-prom", check=False)


def test_exposition_is_valid_and_bounded(container):
    status, ctype, text = scrape()
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
    # promtool's linter: names, units, _total counters, HELP and TYPE. It prints what it would fix.
    fetch = f"import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('{METRICS_URL}').read().decode())"
    lint = container.sh(f'set -o pipefail; python3 -c "{fetch}" | promtool check metrics', check=False)
    assert lint.returncode == 0 and lint.stdout.strip() == "" and lint.stderr.strip() == "", \
        (lint.stdout, lint.stderr)
    series = parse(text)
    names = {name for name, _ in series}
    assert all(n.startswith("difysandbox_") for n in names), names
    for family in ("difysandbox_runs_total", "difysandbox_run_duration_seconds_bucket",
                   "difysandbox_admission_wait_seconds_bucket", "difysandbox_runs_in_flight",
                   "difysandbox_max_workers", "difysandbox_requests_refused_max_requests_total",
                   "difysandbox_pool_runs_total", "difysandbox_pool_prepared_runs", "difysandbox_uid_pool_free",
                   "difysandbox_dependency_generation", "difysandbox_build_info",
                   "difysandbox_stats_start_time_seconds", "difysandbox_manager_start_time_seconds"):
        assert family in names, family
    # Bounded cardinality: labels come from fixed vocabularies only.
    allowed = {"language": {"python3", "nodejs", "unknown"}, "result": set(RESULT_LABEL.values()),
               "outcome": {"hit", "miss"}, "le": None, "version": None, "release": None}
    for name, labels in series:
        for k, v in labels:
            assert k in allowed, (name, k)
            assert allowed[k] is None or v in allowed[k], (name, k, v)
    assert len(series) < 300, len(series)
    # Only /metrics: anything else is 404, and a POST 405.
    with pytest.raises(urllib.error.HTTPError) as e:
        scrape("/other")
    assert e.value.code == 404
    req = urllib.request.Request(METRICS_URL, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 405


def test_prometheus_rates_match_getstats_and_the_journal(container, prometheus):
    set_config(container, "worker_timeout: 2\nmax_requests: 1\n")
    call(container, "ReloadConfig")
    try:
        records_before = len([l for l in container.journal("-o", "json", RUN_FINISHED).splitlines() if l])
        before = prom_runs()
        refused_before = sum(int(float(s["value"][1])) for s in
                             prom_query("difysandbox_requests_refused_max_requests_total"))
        hist_before = int(float(prom_query(
            'difysandbox_run_duration_seconds_count{language="python3"}')[0]["value"][1]))
        for code in ("print(1)", "print(2)", "print(3)", "import sys; sys.exit(3)"):
            status, body = request("POST", "/v1/sandbox/run",
                                   {"language": "python3", "code": code, "preload": "", "enable_network": False})
            assert status == 200 and json.loads(body)["code"] == 0, body
        sleeper = threading.Thread(target=request, args=("POST", "/v1/sandbox/run", {
            "language": "python3", "code": "import time; time.sleep(1.2)", "preload": "",
            "enable_network": False}))
        sleeper.start()
        time.sleep(0.5)
        status, body = request("POST", "/v1/sandbox/run",
                               {"language": "python3", "code": "print(4)", "preload": "", "enable_network": False})
        sleeper.join(30)
        assert status == 503, body
    finally:
        set_config(container, "")
        call(container, "ReloadConfig")

    st = stats(container)
    # Prometheus scrapes every second: wait until its newest sample is GetStats' numbers, then compare.
    deadline = time.time() + 15
    while prom_runs() != stats_runs(st) and time.time() < deadline:
        time.sleep(0.5)
    after = prom_runs()
    assert after == stats_runs(st), (after, stats_runs(st))
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert delta == {("python3", "ok"): 4, ("python3", "error"): 1, ("python3", "refused"): 1}, delta
    refused = sum(int(float(s["value"][1])) for s in prom_query("difysandbox_requests_refused_max_requests_total"))
    assert refused - refused_before == 1
    hist = int(float(prom_query('difysandbox_run_duration_seconds_count{language="python3"}')[0]["value"][1]))
    assert hist - hist_before == 5
    assert st["Latency"]["python3"][0] == hist
    # The journal's run records say the same: four ok and one error since.
    deadline = time.time() + 10
    while True:
        records = [json.loads(l) for l in container.journal("-o", "json", RUN_FINISHED).splitlines() if l]
        records = records[records_before:]
        if len(records) >= 5 or time.time() > deadline:
            break
        time.sleep(0.2)
    results = sorted(r["RESULT"] for r in records)
    assert results == ["error", "ok", "ok", "ok", "ok"], results
    # A rate, as a dashboard asks for it: over the last minute, the ok runs are seen.
    rate = prom_query('sum(increase(difysandbox_runs_total{language="python3",result="ok"}[1m]))')
    assert float(rate[0]["value"][1]) > 0
    # Saturation and UID pool as GetStats sees them.
    free = int(float(prom_query("difysandbox_uid_pool_free")[0]["value"][1]))
    assert abs(free - st["UidPoolFree"]) <= 3  # the warm pool refills between the two reads
    gens = {s["metric"]["language"]: int(float(s["value"][1]))
            for s in prom_query("difysandbox_dependency_generation")}
    assert gens == st["DependencyGenerations"], (gens, st["DependencyGenerations"])


def test_counters_survive_a_manager_restart(container):
    _, _, text = scrape()
    before = parse(text)
    container.sh("systemctl restart difysandbox-manager.service")
    _, _, text = scrape()
    after = parse(text)
    runs = {k: v for k, v in before.items() if k[0] == "difysandbox_runs_total"}
    assert runs and all(after[k] == v for k, v in runs.items())
    stats_start = ("difysandbox_stats_start_time_seconds", frozenset())
    manager_start = ("difysandbox_manager_start_time_seconds", frozenset())
    assert after[stats_start] == before[stats_start]
    assert after[manager_start] > before[manager_start]


def test_a_scrape_starts_a_stopped_manager(container):
    container.sh("systemctl stop difysandbox-manager.service")
    status, _, text = scrape()
    assert status == 200 and "difysandbox_runs_total" in text
    assert container.sh("systemctl is-active difysandbox-manager.service").stdout.strip() == "active"


def test_socket_counters_come_from_systemd(container):
    scrape()  # the manager asks systemd after each scrape; the next one shows the answer
    time.sleep(0.5)
    series = parse(scrape()[2])
    accepted = series[("difysandbox_socket_accepted_connections_total", frozenset())]
    now = int(container.sh("systemctl show -P NAccepted difysandbox.socket").stdout)
    assert 0 < accepted <= now
    assert ("difysandbox_socket_failed", frozenset()) in series
    assert series[("difysandbox_socket_failed", frozenset())] == 0


def test_alert_rules_and_dashboard_queries(container, prometheus):
    p = container.sh(f"promtool check rules {RULES}", check=False)
    assert p.returncode == 0 and "SUCCESS: 5 rules found" in p.stdout, (p.stdout, p.stderr)
    # The rules are loaded by the test's Prometheus and evaluate without error.
    with urllib.request.urlopen(f"http://127.0.0.1:{PROM_PORT}/api/v1/rules", timeout=10) as resp:
        groups = json.load(resp)["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert {r["name"] for r in rules} == {"DifysandboxManagerDown", "DifysandboxSocketFailed",
                                          "DifysandboxRefusedAtMaxRequests", "DifysandboxPoolAlwaysMissing",
                                          "DifysandboxUidPoolNearEmpty"}
    deadline = time.time() + 10
    while any(r.get("health") != "ok" for r in rules) and time.time() < deadline:
        time.sleep(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{PROM_PORT}/api/v1/rules", timeout=10) as resp:
            rules = [r for g in json.load(resp)["data"]["groups"] for r in g["rules"]]
    assert all(r.get("health") == "ok" for r in rules), rules
    # Every query of the dashboard parses and names only series the endpoint has.
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 12
    names = {name for name, _ in parse(scrape()[2])}
    for expr in exprs:
        q = expr.replace("$__rate_interval", "1m").replace('"$language"', '".*"')
        prom_query(q)  # raises on a parse error
        for name in re.findall(r"\b(difysandbox_[a-z_]+)", expr):
            assert name in names or re.sub(r"_(bucket|sum|count)$", "", name) + "_bucket" in names, name


def test_scrape_cost_bench_runs(container):
    """bench/metrics-scrape against the real manager: every scrape answered (its CPU figures are for
    docs/monitoring.md; no timing is asserted here)."""
    p = container.sh(f"{TOP}/bench/metrics-scrape --scrapes 2000 --json", timeout=120)
    result = json.loads(p.stdout)
    print("metrics-scrape:", result)
    assert result["scrapes"] == 2000 and result["failures"] == 0, result
    assert result["bytes"] > 1000 and result["server_cpu_usec_per_scrape"] >= 0
