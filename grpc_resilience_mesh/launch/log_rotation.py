"""The mesh's logs (`<state dir>/logs/<name>.log`) kept to a bounded size while it runs.

Each process writes its log through its stdout, a descriptor opened O_APPEND by the spawner, so the
launcher rotates by copy and truncate
(grpc_resilience_mesh.services.telemetry.rotation.copy_truncate): a log past `MESH_LOG_MAX_BYTES` is
copied to `<name>.log.1` (`.1` to `.2`, up to `MESH_LOG_BACKUPS`) and emptied in place, and the
process's next line lands at its start. Sizes are checked every CHECK_EVERY_S from one thread, so a
log can pass its bound by what is written in that time; a line written between the copy and the
truncation is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.telemetry.rotation import copy_truncate

log = logging.getLogger(__name__)

CHECK_EVERY_S = 5.0
LOG_MAX_BYTES = settings.Var(
    "MESH_LOG_MAX_BYTES",
    lambda raw: settings.integer(raw, 64 * 1024),
    16 << 20,
    "a process's log rotates past this size",
)
LOG_BACKUPS = settings.Var(
    "MESH_LOG_BACKUPS", lambda raw: settings.integer(raw, 0, 100), 2, "rotated logs kept"
)


@dataclass(frozen=True)
class LogLimits:
    """How big a log grows before it rotates, and how many rotated ones are kept."""

    max_bytes: int = LOG_MAX_BYTES.default
    """MESH_LOG_MAX_BYTES: at least 64 KiB."""
    backups: int = LOG_BACKUPS.default
    """MESH_LOG_BACKUPS: 0-100; 0 empties a full log without keeping a copy."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self:
        """The limits from the environment (a bad value is a ConfigError naming it)."""
        return cls(max_bytes=LOG_MAX_BYTES.read(environ), backups=LOG_BACKUPS.read(environ))

    @property
    def total_bytes(self) -> int:
        """About the most one process's log and its copies hold."""
        return self.max_bytes * (self.backups + 1)


class LogRotator:
    """Rotates every `*.log` of one folder that outgrew its bound, on demand or every few s."""

    def __init__(self, log_dir: Path, limits: LogLimits) -> None:
        self.log_dir = log_dir
        self.limits = limits
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> list[Path]:
        """Rotate the logs past their bound now; the ones rotated."""
        rotated = []
        for path in sorted(self.log_dir.glob("*.log")):
            try:
                if path.stat().st_size > self.limits.max_bytes:
                    copy_truncate(path, self.limits.backups)
                    rotated.append(path)
            except OSError as err:  # a full disk or a file removed: try again next time
                log.warning("could not rotate %s: %s", path, err)
        return rotated

    def start(self, every_s: float = CHECK_EVERY_S) -> None:
        """Check from a thread every `every_s` until stop()."""
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(every_s,), name="mesh-log-rotation", daemon=True
        )
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            self.check()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
