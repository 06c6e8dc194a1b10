"""A watchdog that took longer than the ttl to start gives the runner a whole ttl from its start:
the runner's first heartbeat comes after the watchdog is armed, and a slow start (a loaded
machine) once rolled a live run's faults back at once."""

from __future__ import annotations

import os
import time
from pathlib import Path

from grpc_resilience_mesh.chaos.topology.watchdog import why_roll_back


def test_a_heartbeat_older_than_the_ttl_counts_from_the_watchdogs_start(tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    heartbeat.write_text("alive\n")
    written = time.time() - 5.0  # written before a watchdog that took 5 s to start
    os.utime(heartbeat, (written, written))
    assert why_roll_back(heartbeat, os.getpid(), 1.5) == "no heartbeat for 5.0 s (ttl 1.5 s)"
    assert why_roll_back(heartbeat, os.getpid(), 1.5, since=time.time()) is None
    # Past a ttl from its start, a runner that never beat is rolled back all the same.
    assert why_roll_back(heartbeat, os.getpid(), 1.5, since=time.time() - 2.0) is not None
