"""tests/compose run only inside `make compose-rehearsal`, against the stack it brought up."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.compose.stack import Stack

# The embedded mesh the trace test compares with: `mesh up` as the e2e tests start it.
from tests.e2e.conftest import mesh_up  # noqa: F401
from tests.e2e.mesh_up_process import MESH
from tests.support.rehearsal_gate import skip_outside


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_outside(
        items,
        Path(__file__).parent,
        "MESH_COMPOSE_REHEARSAL",
        "the compose stack under podman: run by `make compose-rehearsal` (it installs "
        "podman if missing, builds the images, brings the stack up, then runs these)",
    )


@pytest.fixture(scope="session")
def stack() -> Stack:
    binary = Path(os.environ["REHEARSAL_COMPOSE"])
    assert binary.exists(), f"{binary}: no docker-compose binary (make compose-rehearsal)"
    stack = Stack(binary)
    answered(stack)
    return stack


def answered(stack: Stack, limit_s: float = 90.0) -> None:
    """Wait until a home request answers end to end. Each container's healthcheck says it
    serves, not that its callers' first connections (through Toxiproxy, by service name on
    podman's network) are made: on a loaded machine the first homes after `up` can miss the
    gateway's profile deadline for a few seconds. A stack that never answers fails here."""
    deadline = time.monotonic() + limit_s
    env = {**os.environ, "MESH_API_KEY": stack.api_key}
    while True:
        done = subprocess.run(
            [*MESH, "call", "home", "--user", "u-0001", "--addr", stack.gateway, "--json", "-"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        if done.returncode == 0:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"no home answered within {limit_s:g} s: {done.stderr[-500:]}")
        time.sleep(1)
