"""Shared fixtures: a whole embedded mesh on free ports, started once per module that asks."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from tests.support.rehearsal_gate import skip_installs_outside

if "PYTEST_XDIST_WORKER" in os.environ:
    # A pytest-xdist worker (`make check` runs two) starts with COLUMNS=80 and LINES=24 set. A
    # rich Console created at import keeps a width read from COLUMNS, so the CLI's consoles
    # would stay 80 wide and never see the COLUMNS a test passes to one invocation.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

# Started in the background by a shell without job control (`make test &` in a script, nohup),
# pytest inherits SIGINT (and under nohup SIGHUP) ignored, and so does every process a test
# starts. The CLI rightly leaves an ignored signal ignored (stop_signals.py: nohup's meaning),
# so the tests of what Ctrl-C, SIGHUP and SIGTERM do would wait for an exit that never comes.
# They test the dispositions a terminal gives: put those back.
for _sig, _default in (
    (signal.SIGINT, signal.default_int_handler),
    (signal.SIGHUP, signal.SIG_DFL),
    (signal.SIGTERM, signal.SIG_DFL),
):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, _default)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_installs_outside(items)


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
