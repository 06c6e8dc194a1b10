"""`mesh chaos stop`: pulls the machine's lever with a reason, `--release` lets runs start again."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.topology import lever
from grpc_resilience_mesh.cli.app import app


@pytest.fixture
def lever_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "lever"
    monkeypatch.setenv(lever.LEVER_ENV, str(path))
    return path


def _mesh(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["chaos", "stop", *args], env={"COLUMNS": "300"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, " ".join(result.output.split())


def test_stop_pulls_the_lever_with_its_reason(lever_file: Path) -> None:
    code, out = _mesh("--reason", "payments freeze")
    assert code == 0, out
    assert lever_file.exists() and lever.pulled() == "payments freeze"
    assert f"chaos lever pulled ({lever_file}): payments freeze" in out
    assert "mesh chaos stop --release" in out


def test_stop_without_a_reason_says_who_pulled(lever_file: Path) -> None:
    assert _mesh()[0] == 0
    assert lever.pulled() == "pulled with `mesh chaos stop`"


def test_release_lets_runs_start_again(lever_file: Path) -> None:
    lever.pull("incident")
    code, out = _mesh("--release")
    assert code == 0, out
    assert lever.pulled() is None and not lever_file.exists()
    assert f"chaos lever released ({lever_file})" in out
    code, out = _mesh("--release")
    assert code == 0 and f"the chaos lever was not pulled ({lever_file})" in out


def test_the_chaos_help_lists_stop() -> None:
    result = CliRunner().invoke(app, ["chaos", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "stop" in result.output and "refuse new ones until released" in result.output
