"""A `mesh up` subprocess as the e2e tests see it (shared by conftest and the tests)."""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MESH = [sys.executable, "-m", "chaos.cli"]


@dataclass
class MeshUp:
    """A running `mesh up --auto-ports`: its state (var/mesh.json) and how to stop it."""

    proc: subprocess.Popen[bytes]
    state_dir: Path
    state: dict[str, Any]

    def metadata(self) -> tuple[tuple[str, str], ...]:
        key = self.state.get("api_key")
        return (("authorization", f"Bearer {key}"),) if key else ()

    def stop(self) -> str:
        """SIGTERM, as Ctrl-C or a supervisor would; the command's output."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        return out.decode()
