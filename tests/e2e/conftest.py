"""`mesh up` run as a user runs it: a subprocess, its state file, a SIGTERM at the end."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mesh_up_process import MESH, MeshUp
from tests.support.polling import wait_until


@pytest.fixture
def mesh_up(tmp_path: Path) -> Iterator[MeshUp]:
    state_dir = tmp_path / "var"
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        path = state_dir / "mesh.json"

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"mesh up exited early: {proc.communicate()[0].decode()}")
            return path.exists()

        wait_until(up, 90, "mesh up writing its state file", 0.1)
        running = MeshUp(proc, state_dir, json.loads(path.read_text()))
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
