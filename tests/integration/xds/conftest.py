"""One control plane for every xDS test of this process (gRPC reads its bootstrap once)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.xds.plane import Plane, running_plane


@pytest.fixture(scope="session")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with running_plane(Path(tmp_path_factory.mktemp("xds")), {"nodes": {}}) as serving_plane:
        yield serving_plane
