"""A burst of connections against difysandbox.socket (issue 24, item 1), shared by the system tier (systemd
252 in a container) and the VM tier (systemd 252 and 257). About 260 connections opened and closed within
1-2 s once put the socket into 'failed (trigger-limit-hit)': every later connection was refused until an
operator ran `systemctl reset-failed`. Bounded: at most BURST_CONNECTIONS sockets, in at most
BURST_SECONDS, to a loopback address only."""

import resource
import selectors
import socket
import time

BURST_CONNECTIONS = 1000  # five times systemd's default trigger limit of 200 in 2 s
BURST_SECONDS = 3.0
WAVE = 200  # sockets open at once; each wave is closed before the next


def burst(host, port, source=None, connections=BURST_CONNECTIONS, seconds=BURST_SECONDS):
    """Opens `connections` TCP connections to host:port (from `source` when given) and closes each as soon
    as it is established, in waves, for at most `seconds`. Returns how many were established."""
    assert host.startswith("127."), "a burst aims at loopback only"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < WAVE + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, WAVE + 64), hard))
    deadline = time.monotonic() + seconds
    established = opened = 0
    while opened < connections and time.monotonic() < deadline:
        sel = selectors.DefaultSelector()
        for _ in range(min(WAVE, connections - opened)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            if source:
                s.bind((source, 0))
            s.connect_ex((host, port))
            sel.register(s, selectors.EVENT_WRITE)
            opened += 1
        wave_end = min(deadline, time.monotonic() + 0.5)
        while sel.get_map() and time.monotonic() < wave_end:
            for key, _ in sel.select(timeout=0.05):
                s = key.fileobj
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    established += 1
                sel.unregister(s)
                s.close()
        for key in list(sel.get_map().values()):  # not established in time: dropped all the same
            sel.unregister(key.fileobj)
            key.fileobj.close()
        sel.close()
    return established


