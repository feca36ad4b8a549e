"""The capabilities the runner's unit grants (units/difysandbox-runner.service.in, CapabilityBoundingSet=),
and what is wrong with a live runner's. Shared by the system tier (systemd 252 in a container) and the VM
tier (systemd 252 and 257): systemd 255+ took CAP_SETUID from a unit with User=root and a seccomp setting
while the bounding set still had it (issue 23), which only the live process shows."""

# By number, as in linux/capability.h.
RUNNER_CAPABILITIES = {"CAP_DAC_OVERRIDE": 1, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7,
                       "CAP_SETPCAP": 8, "CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21, "CAP_SYS_TIME": 25}


def runner_capability_problems(status):
    """From the runner's /proc/PID/status text: it must hold, effective and permitted, exactly what its unit
    bounds it to. An empty list when it does."""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    want = sum(1 << bit for bit in RUNNER_CAPABILITIES.values())
    problems = []
    for name in ("CapEff", "CapPrm", "CapBnd"):
        have = int(fields[name], 16)
        if have != want:
            missing = sorted(n for n, b in RUNNER_CAPABILITIES.items() if not have >> b & 1)
            problems.append(f"{name} {have:#x}, expected {want:#x}: missing {missing}, extra {have & ~want:#x}")
    return problems


def bounding_set_matches(systemctl_value):
    """`systemctl show -P CapabilityBoundingSet` of the runner names exactly RUNNER_CAPABILITIES."""
    return sorted(n.upper() for n in systemctl_value.split()) == sorted(RUNNER_CAPABILITIES)
