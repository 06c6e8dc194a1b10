"""`mesh demo` says each stage: the mesh started (and how long it took), then each experiment
as `n/N name`, so a long run is never a silent one."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress

from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.report import report_md
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.session import mesh_scope, session
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from grpc_resilience_mesh.chaos.session.rounds import run_rounds
from grpc_resilience_mesh.cli import chaos_run
from grpc_resilience_mesh.cli.chaos_progress import RunProgress
from tests.unit.chaos.render_fixtures import demo_result


class Replay:
    """A runner that returns a recorded result (no mesh)."""

    def __init__(self, state_dir: Path) -> None:
        self.target = Target("127.0.0.1:1", None, {}, {}, state_dir=state_dir)

    async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult:
        return demo_result(name)

    async def close(self) -> None:
        """No load generator to end."""


async def test_each_experiment_is_announced_as_n_of_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The figures are test_plots.py's: drawn here they were 12 of this test's 13 s.
    monkeypatch.setattr(report_md, "plot", lambda *args: [])
    names = ["provider-outage", "worker-crash"]
    resolved = [(n, *next((p, e) for p, e in catalogue() if p.stem == n)) for n in names]
    console = Console(width=120, record=True, file=io.StringIO())
    with Progress(console=console, auto_refresh=False) as progress:
        shown = RunProgress(progress, [e for _, _, e in resolved])
        with ReportWriter(tmp_path, tmp_path, inline=True) as writer:  # plot() patched here
            await run_rounds(Replay(tmp_path), resolved, shown, writer)
    text = console.export_text()
    assert "1/2 provider-outage" in text and "2/2 worker-crash" in text
    assert text.index("1/2 provider-outage") < text.index("2/2 worker-crash")
    assert (tmp_path / "worker-crash" / "report.md").exists()  # each report is still written


def test_the_mesh_start_is_a_line_with_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FakeMesh:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def start(self) -> None:
            """Started at once."""

        def stop(self) -> dict[str, int]:
            return {}

    async def no_runs(*args: Any) -> list[ExperimentResult]:
        return []

    console = Console(width=120, record=True, file=io.StringIO())
    monkeypatch.setattr(mesh_scope, "Mesh", FakeMesh)
    monkeypatch.setattr(chaos_run, "console", console)
    monkeypatch.setattr(Target, "from_mesh", lambda mesh: Replay(tmp_path).target)
    monkeypatch.setattr(session, "run_rounds", no_runs)
    chaos_run.execute(["provider-outage"], None, None, tmp_path / "r", tmp_path / "s")
    assert "started the embedded mesh in " in console.export_text()
