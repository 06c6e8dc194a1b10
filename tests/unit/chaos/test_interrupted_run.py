"""Ctrl-C during `mesh chaos run`: exit 130, and the last line says which mesh is left: the
embedded one stopped, a `--target` mesh still running (it is the user's, and we did not stop
it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.session import mesh_scope, session
from grpc_resilience_mesh.cli.app import app
from tests.unit.chaos.fake_mesh import FakeMesh


@pytest.fixture
def ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user presses Ctrl-C while the first experiment runs."""

    async def interrupted(self: Runner, name: str, path: Path, exp: Experiment) -> ExperimentResult:
        raise KeyboardInterrupt

    monkeypatch.setattr(Runner, "run", interrupted)
    monkeypatch.setattr(session, "private_umask", lambda: None)  # the test process's umask
    monkeypatch.setattr(mesh_scope, "Mesh", FakeMesh)
    FakeMesh.made = []


def _run(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    argv = ["chaos", "run", "provider-outage", "--reports", str(tmp_path / "reports"), *args]
    result = CliRunner().invoke(app, argv, env={"MESH_LOADGEN": "python"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, [line.strip() for line in result.output.splitlines() if line.strip()]


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_against_a_target_says_the_target_mesh_is_still_running(tmp_path: Path) -> None:
    target = "toxiproxy=http://127.0.0.1:1,gateway=127.0.0.1:1"
    code, lines = _run(tmp_path, "--target", target, "--state-dir", str(tmp_path / "state"))
    assert code == 130
    assert lines[-1] == "interrupted: every fault was removed, the target mesh is still running"
    assert FakeMesh.made == [], "no embedded mesh was started"


@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_on_the_embedded_mesh_says_it_stopped(tmp_path: Path) -> None:
    code, lines = _run(tmp_path, "--state-dir", str(tmp_path / "state"))
    assert code == 130
    assert lines[-1] == "interrupted: every fault was removed, the mesh stopped"
    assert [m.stopped for m in FakeMesh.made] == [True]
