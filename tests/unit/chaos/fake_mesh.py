"""An embedded mesh for `mesh chaos run`'s CLI tests: it starts no process, remembers being
stopped, and lists every one made (`FakeMesh.made`, reset by the test)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any


class FakeMesh:
    """A mesh that starts and stops nothing; subclasses may write what its services would."""

    made: list[FakeMesh] = []

    def __init__(self, state_dir: Path, **kwargs: Any) -> None:
        self.state_dir = state_dir
        self.state = SimpleNamespace(
            gateway="127.0.0.1:1", toxiproxy=None, services={}, api_key=None, admin_token=None
        )
        self.stopped = False
        self.policy = "full"  # the policy a real Mesh starts its services under
        FakeMesh.made.append(self)

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        self.stopped = True
