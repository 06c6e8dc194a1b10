"""The running experiment's progress as a small JSON file in the mesh's state dir
(`experiment.json`), which the console shows beside the graph: experiment, variant, phase,
requests done of total and their outcomes by code so far. Written at most every `every_s`,
atomically, and `finished` at the end; only into the state dir of a mesh that is up (its
mesh.json is there), never elsewhere."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from grpc_resilience_mesh.client.state import STATE_FILE

PROGRESS_FILE = "experiment.json"


class ProgressFile:
    def __init__(self, state_dir: Path, every_s: float = 0.25) -> None:
        self._path = state_dir / PROGRESS_FILE
        self._every_s = every_s
        self._last_s = 0.0
        self.experiment = ""
        self._label = ""
        self._codes: dict[str, int] = {}

    def count(self, label: str, code: str) -> None:
        """One request of the load `label` ended with `code` (counts start again per load)."""
        if label != self._label:
            self._label, self._codes = label, {}
        self._codes[code] = self._codes.get(code, 0) + 1

    def update(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last_s < self._every_s and done < total:
            return
        self._last_s = now
        variant, _, phase = label.partition(": ")
        self._write(
            {
                "experiment": self.experiment,
                "variant": variant,
                "phase": phase or label,
                "done": done,
                "total": total,
                "codes": dict(self._codes) if label == self._label else {},
            }
        )

    def finish(self) -> None:
        self._write({"experiment": self.experiment, "finished": True})

    def _write(self, doc: dict[str, object]) -> None:
        if not (self._path.parent / STATE_FILE).exists():
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=f".{PROGRESS_FILE}.")
            with os.fdopen(fd, "w") as out:
                out.write(json.dumps(doc))
            os.replace(tmp, self._path)
        except OSError:
            pass  # progress is a courtesy to the console; the run goes on without it
