"""`mesh up` run as a user runs it: a subprocess, its state file, a SIGTERM at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.mesh_up_process import MeshUp, running_mesh_up


@pytest.fixture
def mesh_up(tmp_path: Path) -> Iterator[MeshUp]:
    with running_mesh_up(tmp_path / "var") as running:
        yield running
