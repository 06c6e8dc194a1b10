"""Start one process of the mesh with its output in the state dir's logs/<name>.log."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from chaos.launch.processes import ChildProcess, log_line


class LogSpawner:
    """Spawns processes in their own session, each logging to logs/<name>.log: the log is
    truncated on a name's first start in this spawner's life, appended to on every later one."""

    def __init__(self, state_dir: Path) -> None:
        self.log_dir = state_dir / "logs"
        self._begun: set[str] = set()

    def spawn(
        self,
        name: str,
        args: list[str],
        env: Mapping[str, str],
        python: bool = True,
        *,
        supervised: bool = True,
        note: str | None = None,
    ) -> ChildProcess:
        """Start `args` (under this Python unless `python` is false) with os.environ plus
        `env`; `note`, a JSON log line, goes into the log first."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        mode = "ab" if name in self._begun else "wb"
        self._begun.add(name)
        with log_path.open(mode) as log:
            if note:
                log.write(log_line(name, note))
                log.flush()
            popen = subprocess.Popen(
                [sys.executable, *args] if python else args,
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return ChildProcess(name, popen, log_path, dict(env), supervised=supervised)
