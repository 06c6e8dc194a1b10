"""tests/compose run only inside `make compose-rehearsal`, against the stack it brought up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.compose.stack import Stack

# The embedded mesh the trace test compares with: `mesh up` as the e2e tests start it.
from tests.e2e.conftest import mesh_up  # noqa: F401


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("MESH_COMPOSE_REHEARSAL") == "1":
        return
    skip = pytest.mark.skip(
        reason="the compose stack under podman: run by `make compose-rehearsal` (it installs "
        "podman if missing, builds the images, brings the stack up, then runs these)"
    )
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def stack() -> Stack:
    binary = Path(os.environ["REHEARSAL_COMPOSE"])
    assert binary.exists(), f"{binary}: no docker-compose binary (make compose-rehearsal)"
    return Stack(binary)
