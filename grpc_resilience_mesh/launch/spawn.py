"""Start one process of the mesh with its output in the state dir's logs/<name>.log."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from grpc_resilience_mesh.launch.private import PRIVATE_UMASK
from grpc_resilience_mesh.launch.processes import ChildProcess, log_line
from grpc_resilience_mesh.launch.state_guard import open_private


class LogSpawner:
    """Spawns processes in their own session, each logging to logs/<name>.log (owner-only,
    grpc_resilience_mesh.launch.private; never through a link,
    grpc_resilience_mesh.launch.state_guard): the log is truncated on a name's first start in this
    spawner's life, appended to on every later one."""

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
        self.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        # O_APPEND on every start: the log rotation truncates the file in place, and an
        # appending writer's next line then lands at its new end (not past a hole).
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        fd = open_private(log_path, flags if name in self._begun else flags | os.O_TRUNC)
        self._begun.add(name)
        try:
            if note:
                os.write(fd, log_line(name, note))
            popen = subprocess.Popen(
                [sys.executable, *args] if python else args,
                env={**os.environ, **env},
                stdout=fd,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                umask=PRIVATE_UMASK,
            )
        finally:
            os.close(fd)
        return ChildProcess(name, popen, log_path, dict(env), supervised=supervised)
