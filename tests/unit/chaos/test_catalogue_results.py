"""`mesh demo --results PATH` and `mesh chaos run --results PATH` rewrite the catalogue's results
page in place: the run's time, what held and what missed, the capacity, the load generator's
line, and each experiment's time in the runner against its plan; the page's prose kept (no mesh
here: recorded results)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.bench.results import BEGIN, END, Machine
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.plan import plan
from grpc_resilience_mesh.chaos.session import session
from grpc_resilience_mesh.cli import chaos_run
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.chaos_results import ResultsPage, RunFigures, catalogue_block
from tests.unit.chaos.render_fixtures import demo_result

MACHINE = Machine(
    cpus=2, loadavg_1m=0.5, python="3.11.7", when=datetime(2026, 12, 4, 6, 55, tzinfo=UTC)
)
PAGE = f"# Catalogue\n\nwhat it runs\n\n{BEGIN}\nold figures\n{END}\n\nwhat it means\n"
FIGURES = RunFigures(
    took_s=383.2,
    start_s=5.04,
    capacity={
        ("home",): {"capacity_per_s": 457.0},
        ("checkout",): {"capacity_per_s": 515.0},
        ("home", "home", "home", "checkout"): {"capacity_per_s": 373.4},
    },
    generator="load generator (go): 0.24 ms CPU per request, 6.1% of the mesh's CPU over 21982",
)


def _ran(name: str, took_s: float, held: bool) -> ExperimentResult:
    result = demo_result(name)
    result.took_s = took_s
    if held:
        result.verdicts = [v for v in result.verdicts if v.passed]
    return result


def test_the_block_states_the_run_and_each_experiment_against_its_plan() -> None:
    results = [_ran("provider-outage", 58.0, held=True), _ran("worker-crash", 6.1, held=False)]
    assert not results[1].held
    planned = {p.name: p.total_s for p in plan((r.name, r.experiment) for r in results)}
    block = catalogue_block(results, FIGURES, MACHINE, "mesh demo --results x.md")
    assert block.startswith("Measured 2026-12-04 06:55 UTC on 2 CPUs, Python 3.11.7")
    assert "2 experiments, the list run once." in block
    capacity = "home 457, checkout 515, mixed (3 home : 1 checkout) 373"
    assert f"| **383 s** | 5.0 s | 64 s | **1 of 2** | {capacity} |" in block
    assert FIGURES.generator in block
    assert "What missed:\n\n- worker-crash: " in block and "- provider-outage" not in block
    outage = planned["provider-outage"]
    assert f"| provider-outage | 58.0 | {outage:.1f} | {58.0 / outage:.2f} |" in block
    assert block.index("| provider-outage |") < block.index("| worker-crash |")  # longest first
    assert f"| **all** | **64.1** | **{sum(planned.values()):.1f}** |" in block
    assert block.endswith("Reproduce: `mesh demo --results x.md`\n")


def test_repeated_runs_show_the_median_and_held_in_all() -> None:
    result = _ran("worker-crash", 7.0, held=True)
    result.repeats = [_ran("worker-crash", s, held=True) for s in (5.0, 9.0, 7.5)]
    figures = RunFigures(383.0, None, {}, "load generator: n/a", repeat=3)
    block = catalogue_block([result], figures, MACHINE, "mesh chaos run --all --repeat 3")
    assert "the list run 3 times on one mesh" in block
    assert "| **383 s** | a running mesh | 8 s | **1 of 1** in all 3 runs | - |" in block
    assert "the median of 3 runs" in block and "| worker-crash | 7.5 |" in block


def test_the_page_is_rewritten_in_place(tmp_path: Path) -> None:
    page = tmp_path / "catalogue.md"
    page.write_text(PAGE)
    ResultsPage(page, "mesh demo --results catalogue.md").write(
        [_ran("worker-crash", 6.1, held=True)], FIGURES
    )
    text = page.read_text()
    assert text.startswith(f"# Catalogue\n\nwhat it runs\n\n{BEGIN}\nMeasured 20")
    assert text.endswith(f"{END}\n\nwhat it means\n") and "old figures" not in text
    assert "| worker-crash | 6.1 |" in text


def test_chaos_run_results_option_writes_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def replay(*args: Any) -> list[ExperimentResult]:  # no mesh: a recorded result
        return [_ran("provider-outage", 58.0, held=True)]

    monkeypatch.setattr(session, "run_rounds", replay)
    page = tmp_path / "catalogue.md"
    page.write_text(PAGE)
    argv = ["chaos", "run", "provider-outage", "--target", "gateway=127.0.0.1:1"]
    argv += ["--reports", str(tmp_path / "reports"), "--results", str(page)]
    result = CliRunner().invoke(app, argv, env={"MESH_LOADGEN": "python"})
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.endswith(f"{END}\n\nwhat it means\n") and "old figures" not in text
    assert "| a running mesh | 58 s | **1 of 1** |" in text
    assert f"Reproduce: `mesh chaos run provider-outage --results {page}`" in text


def test_the_demo_passes_its_page_and_command_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[ResultsPage | None] = []

    def execute(*args: Any, page: ResultsPage | None = None, **kwargs: Any) -> list[Any]:
        seen.append(page)
        return []

    monkeypatch.setattr(chaos_run, "execute", execute)
    page = tmp_path / "catalogue.md"
    argv = ["demo", "--reports", str(tmp_path), "--json", str(tmp_path / "demo.json")]
    assert CliRunner().invoke(app, [*argv, "--results", str(page)]).exit_code == 0
    assert CliRunner().invoke(app, argv).exit_code == 0
    assert seen == [ResultsPage(page, f"mesh demo --results {page}"), None]
