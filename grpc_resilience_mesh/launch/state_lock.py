"""One mesh per state dir: an flock on <state dir>/mesh.lock, held for the life of the mesh.

The kernel drops the lock when its holder exits, however it exits (kill -9 included), so a
crashed mesh never leaves the state dir locked. The holder writes its pid and gateway into
the file, so a refused start can say which mesh has the state dir. The file is created 0600,
never opened through a link, and never deleted (deleting a lock file lets two processes lock
two different files).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.launch.state_guard import open_private

LOCK_FILE = "mesh.lock"


class StateLock:
    """An exclusive, non-blocking flock on `<state_dir>/mesh.lock`."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self, owner: Mapping[str, Any]) -> dict[str, Any] | None:
        """Take the lock and record `owner` in the file: None. When another process holds it,
        what that process recorded (possibly {}), and nothing is written."""
        if self._fd is not None:
            return None
        fd = open_private(self.path, os.O_RDWR | os.O_CREAT)  # a planted link: refused
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return _read_owner(fd)
            finally:
                os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(dict(owner)).encode(), 0)
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the lock
            self._fd = None


def _read_owner(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:  # the holder is between truncating and writing
        return {}
    return data if isinstance(data, dict) else {}
