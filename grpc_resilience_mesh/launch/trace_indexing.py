"""`mesh up` keeps the index of its span files (grpc_resilience_mesh.client.trace_index) current
while the mesh runs, so `mesh traces ID` finds it built: every EVERY_S in a thread of its own, off
the services' paths (an update reads only what they appended since the last), and once more after
the mesh stopped (what the services wrote as they stopped)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from grpc_resilience_mesh.client.trace_index import index_traces

EVERY_S = 10.0


class TraceIndexer:
    """Brings one traces directory's index up to date every `every_s` until finish()."""

    def __init__(
        self,
        traces_dir: Path,
        every_s: float = EVERY_S,
        build: Callable[[Path], None] = index_traces,
    ) -> None:
        self.traces_dir = traces_dir
        self.every_s = every_s
        self.build = build
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trace-index", daemon=True)

    def start(self) -> TraceIndexer:
        self._thread.start()
        return self

    def finish(self) -> None:
        """Stop the thread (after the update it is in, if any), then update once more."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._build()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._build()

    def _build(self) -> None:
        # The index only saves `mesh traces ID` a scan: whatever goes wrong in it (index_traces
        # already passes over a read-only directory), `mesh up` and this thread go on.
        with contextlib.suppress(Exception):
            self.build(self.traces_dir)
