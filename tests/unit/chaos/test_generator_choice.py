"""Which load generator runs: the Go one when `make peers` built it, else the Python one;
MESH_LOADGEN=python|go forces one, and asking for a missing one is a one-line refusal (exit 2)
before any mesh starts. The run's summary names the generator that ran."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.run.measure import CpuTally
from grpc_resilience_mesh.chaos.session import mesh_scope
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.loadgen import in_process as load
from grpc_resilience_mesh.loadgen.in_process import LoadGeneratorError, generator_command
from grpc_resilience_mesh.services.config_error import ConfigError


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "mesh-loadgen"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setattr(load, "GO_GENERATOR", binary)
    return binary


@pytest.fixture
def missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "absent" / "mesh-loadgen"
    monkeypatch.setattr(load, "GO_GENERATOR", binary)
    return binary


PYTHON = ("python", [sys.executable, "-m", "grpc_resilience_mesh.loadgen.generator"])


def test_go_when_built_unless_python_is_asked_for(built: Path) -> None:
    assert generator_command({}) == ("go", [str(built)])
    assert generator_command({"MESH_LOADGEN": "go"}) == ("go", [str(built)])
    assert generator_command({"MESH_LOADGEN": "python"}) == PYTHON


def test_python_when_go_is_not_built(missing: Path) -> None:
    assert generator_command({}) == PYTHON
    with pytest.raises(LoadGeneratorError, match="make peers"):
        generator_command({"MESH_LOADGEN": "go"})
    with pytest.raises(ConfigError, match="MESH_LOADGEN='rust' is not one of python, go"):
        generator_command({"MESH_LOADGEN": "rust"})


def test_chaos_run_refuses_a_missing_go_generator_before_starting_anything(
    missing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[object] = []
    monkeypatch.setattr(mesh_scope, "Mesh", lambda **kwargs: started.append(kwargs))
    args = ["chaos", "run", "provider-outage", "--reports", str(tmp_path)]
    result = CliRunner().invoke(app, args, env={"MESH_LOADGEN": "go"})
    assert result.exit_code == 2
    assert "make peers" in result.output and started == []


def test_the_summary_names_the_generator_that_ran() -> None:
    tally = CpuTally()
    tally.add(0.05, 2.5, 1000)
    assert tally.line("go").startswith("load generator (go): 0.05 ms CPU per request, 2.0% ")
    assert tally.line().startswith("load generator: 0.05 ms")


def test_a_run_that_sent_no_request_says_so_not_that_the_mesh_was_foreign() -> None:
    """Scenario experiments alone (the job scenarios) send nothing through the generator;
    the line used to say "n/a (a mesh this process did not start)" of a mesh it had started."""
    line = CpuTally().line("go")
    assert line.startswith("load generator: sent no request") and "did not start" not in line
