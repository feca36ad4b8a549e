"""The units' sandboxing does not regress: `systemd-analyze security` of the worker and the manager,
as installed in the container, scores at or below what docs/hardening.md records, and every item it
still reports as exposed is one that docs/hardening.md explains in that unit's section."""

import os
import re

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(TOP, "docs", "hardening.md")

# The unit as docs/hardening.md names it, and the unit systemd-analyze is asked about.
UNITS = {
    "difysandbox@.service": "difysandbox@x.service",
    "difysandbox-runner.service": "difysandbox-runner.service",
    "difysandbox-manager.service": "difysandbox-manager.service",
}


def recorded():
    """{unit: (score, text of its section)} from docs/hardening.md."""
    text = open(REPORT).read()
    scores = dict((u, float(s)) for u, s in
                  re.findall(r"^\| `([^`]+)` \| (\d+\.\d) \| \w+ \|$", text, re.M))
    out = {}
    for unit in UNITS:
        assert unit in scores, f"docs/hardening.md has no score row for {unit}"
        section = re.search(rf"^## `{re.escape(unit)}`.*?(?=^## |\Z)", text, re.M | re.S)
        assert section, f"docs/hardening.md has no section for {unit}"
        out[unit] = (scores[unit], section.group(0))
    return out


def analyze(container, unit):
    load = container.sh(f"systemctl show -P LoadState {unit}", check=False).stdout.strip()
    if load != "loaded":
        pytest.skip(f"{unit} is not installed in the container (LoadState={load or '?'})")
    p = container.sh(f"systemd-analyze security --no-pager {unit}", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d)", p.stdout)
    assert m, p.stdout
    exposed = re.findall(r"^✗ (\S+)\s", p.stdout, re.M)
    return float(m.group(1)), exposed, p.stdout


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_exposure_at_most_recorded_and_every_item_explained(container, unit):
    score, section = recorded()[unit]
    actual, exposed, output = analyze(container, UNITS[unit])
    assert exposed, f"no exposed item parsed from:\n{output}"
    assert actual <= score, (f"{unit}: exposure {actual} is above the {score} of docs/hardening.md; "
                             f"tighten the unit or explain the new items there\n{output}")
    unexplained = [item for item in exposed if f"`{item}`" not in section]
    assert not unexplained, (f"{unit}: exposed items docs/hardening.md does not explain: {unexplained}\n"
                             f"{output}")
