"""Shared fixtures: a whole embedded mesh on free ports, started once per module that asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.launch.mesh import Mesh
from chaos.launch.ports import Ports


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    m = Mesh(state_dir=tmp_path_factory.mktemp("mesh"), ports=Ports.auto())
    m.start()
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "var"
