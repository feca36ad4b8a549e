"""Unauthenticated keep-alive under systemd (issue 24, item 2): connections from several peers that ask for
GET /health without a key every 1.5 s once filled every worker difysandbox.socket allows (MaxConnections=80),
and a new request was reset or timed out. Now MaxConnections=512 leaves room beside six peers at
MaxConnectionsPerSource=64, a connection's requests without a valid key do not reset its 30 s idle timer
(it ends 30 s after its start however often it asks), and from three quarters of MaxConnections= on new
connections make idle unauthenticated ones close. So a legitimate client on a new connection is served
during the flood, and the flood's connections end.

Bounded: 6 peers (127.0.0.2-7) x 32 connections, more than the 80 instances that used to fill
MaxConnections= and fewer than MaxConnectionsPerSource=64 each, for about 45 s; it aims only at the
container's socket on loopback. The legitimate client is 127.0.0.9."""

import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
from keepalive_flood import flood, legitimate_client  # noqa: E402

from conftest import KEY, PORT  # noqa: E402

PEERS = [f"127.0.0.{i}" for i in range(2, 8)]
PER_PEER = 32
MAX_CONNECTIONS = 512  # units/difysandbox.socket
UNAUTH_SECONDS = 30  # src/worker/http.c: the idle timeout, which requests without a valid key do not reset
# The issue asks for 2 s. Once the flood's instances are up, a new connection waits only for its own
# instance (0.05-0.5 s measured); 5 s leaves room for a loaded host. Without room it is never answered while
# the flood lasts (every worker held, and systemd refuses past MaxConnections=).
ANSWER_SECONDS = 5


def worker_instances(container):
    out = container.sh("systemctl list-units --no-legend --plain --state=active 'difysandbox@*.service' "
                       "| wc -l").stdout.strip()
    return int(out)


def test_connections_directory_belongs_to_the_workers(container):
    out = container.sh("stat -c '%U %a' /run/difysandbox/connections").stdout.split()
    assert out == ["difysandbox-worker", "700"], out


def test_a_flood_of_unauthenticated_keepalive_leaves_room_for_dify(container):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < len(PEERS) * PER_PEER + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    assert b'"stdout":"42\\n"' in legitimate_client(PORT, KEY, source="127.0.0.9")[3], "the run itself works"
    flood_size = len(PEERS) * PER_PEER
    stop, stats = threading.Event(), {"connections": 0, "answers": 0, "closed": 0}
    flooder = threading.Thread(target=flood, args=(PORT, stop, stats, PEERS, PER_PEER))
    runs, held = [], []
    started = time.monotonic()
    try:
        flooder.start()
        # systemd starts the flood's instances, tens a second on this host; then its pings flow
        while time.monotonic() - started < UNAUTH_SECONDS - 10:
            held.append(worker_instances(container))
            if held[-1] >= flood_size and stats["answers"] >= flood_size:
                break
            time.sleep(1)
        up = time.monotonic() - started
        for _ in range(3):
            runs.append(legitimate_client(PORT, KEY, source="127.0.0.9"))
            held.append(worker_instances(container))
            time.sleep(0.5)
        closed_before = stats["closed"]
        # the flood's first connections end once their idle timer, never reset by their pings, runs out
        while time.monotonic() - started < UNAUTH_SECONDS + 15 and stats["closed"] < flood_size:
            time.sleep(1)
        closed_at = time.monotonic() - started
        flooding = flooder.is_alive()
    finally:
        stop.set()
        flooder.join(timeout=30)
    print(f"flood up after {up:.1f} s; legitimate client during it (s to /health, s to the run):",
          [(h and round(h, 2), r and round(r, 2)) for h, _, r, _ in runs], "instances:", held, stats,
          f"closed before the client: {closed_before}, by {closed_at:.1f} s: {stats['closed']}")
    assert flooding and stats["answers"] >= flood_size, f"the flood did not run: {stats}"
    # more than the 80 instances that MaxConnections= allowed when the flood filled it
    assert max(held) >= flood_size * 3 // 4, f"the flood held only {held} workers: {stats}"
    assert max(held) <= MAX_CONNECTIONS + 8, f"more instances than MaxConnections=: {held}"  # a few stopping
    for health_seconds, health, run_seconds, answer in runs:
        assert health.startswith(b"HTTP/1.1 200") and health.endswith(b'"ok"'), (health[:300], answer[:300])
        assert health_seconds < ANSWER_SECONDS, f"/health on a new connection took {health_seconds:.2f} s"
        assert answer.startswith(b"HTTP/1.1 200") and b'"stdout":"42\\n"' in answer, answer[-600:]
    # pinging /health every 1.5 s kept none of them open past its 30 s
    assert stats["closed"] >= flood_size, f"only {stats['closed']} of {flood_size} flood connections ended"
