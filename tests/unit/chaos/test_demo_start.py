"""`mesh demo` loads the catalogue once, in the session, before the mesh starts: naming the
experiments for its banner parses no file (each load validates every variant's policy: 2.4 s
for the catalogue, before the banner, issue 46)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment import loading
from grpc_resilience_mesh.chaos.experiment.lesson_order import LESSON_ORDER
from grpc_resilience_mesh.cli import chaos_run
from grpc_resilience_mesh.cli.app import app


def test_the_demo_names_the_catalogue_without_loading_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    loaded: list[str] = []
    ran: list[list[str]] = []

    def load(name_or_path: str, short_sweep: bool = False) -> Any:
        loaded.append(Path(name_or_path).stem)
        raise AssertionError("loaded before the session")

    def execute(names: list[str], *args: Any, **kwargs: Any) -> list[Any]:
        ran.append(names)
        return []

    monkeypatch.setattr(loading, "load_experiment", load)
    monkeypatch.setattr(chaos_run, "execute", execute)
    out = CliRunner().invoke(app, ["demo", "--json", str(tmp_path / "demo.json")])
    assert out.exit_code == 0, out.output
    assert loaded == []
    assert ran == [list(LESSON_ORDER)]
