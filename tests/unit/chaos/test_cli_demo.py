"""The demo tells a story: the lesson's order, overall progress with time left (scenarios
report progress too), a verdict screen that says what each experiment showed (what missed
first: test_verdict_leads_with_misses.py), and no library warning from writing the reports."""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.progress import Progress
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.lesson_order import LESSON_ORDER, in_lesson_order
from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR, Experiment, Variant
from grpc_resilience_mesh.chaos.registry import SCENARIOS, ScenarioContext, ScenarioResult, scenario
from grpc_resilience_mesh.chaos.report import report_md
from grpc_resilience_mesh.chaos.report.missed import missed_line
from grpc_resilience_mesh.chaos.report.report_md import write_report
from grpc_resilience_mesh.chaos.report.tables import showed
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult
from grpc_resilience_mesh.chaos.run.eta import Eta, about, expected_s
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.scenario_run import run_scenario
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.session import report_writer
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from grpc_resilience_mesh.chaos.session.rounds import run_rounds
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.chaos_progress import RunProgress
from grpc_resilience_mesh.cli.chaos_verdict import verdict_screen
from tests.unit.chaos.render_fixtures import demo_result


def test_the_catalogue_runs_in_the_lessons_order() -> None:
    shipped = {p.stem for p in EXPERIMENTS_DIR.glob("*.yaml")}
    assert shipped == set(LESSON_ORDER), (
        "place a new experiment in grpc_resilience_mesh/chaos/lesson_order.py"
    )
    assert [p.stem for p, _ in catalogue()] == list(LESSON_ORDER)
    assert LESSON_ORDER[0] == "deadline-budget" and LESSON_ORDER[-1] == "false-stall"
    assert in_lesson_order(["zz-mine", "pushback", "aa-mine"]) == ["pushback", "aa-mine", "zz-mine"]
    listed = CliRunner().invoke(app, ["chaos", "list"], env={"COLUMNS": "200"}).output
    at = [listed.index(f" {name} ") for name in LESSON_ORDER]
    assert at == sorted(at)


def test_time_left_comes_from_the_loads_and_is_refined_as_experiments_finish() -> None:
    experiments = [exp for _, exp in catalogue()]
    expected = [expected_s(exp) for exp in experiments]
    assert all(e > 0 for e in expected)
    # flapping-dependency's load is capped by its max_duration_s (25 s) per variant.
    flapping = dict(zip(LESSON_ORDER, expected, strict=True))["flapping-dependency"]
    variants = len(
        dict(zip(LESSON_ORDER, experiments, strict=True))["flapping-dependency"].variants
    )
    assert 24 * variants <= flapping <= 40 * variants
    eta = Eta([10.0, 20.0, 30.0])
    assert eta.left_s(0.0) == 60.0
    eta.finished(20.0)  # took twice as long as planned: the rest will take longer too
    guessed = eta.scales[1]
    assert 1.0 < guessed < 2.0  # one 10 s experiment moves the scale, without settling it
    assert eta.left_s(5.0) == pytest.approx(guessed * 20 - 5 + guessed * 30)
    assert about(100) == "about 1 min 40 s left" and about(42) == "about 40 s left"
    assert about(3) == "under 10 s left" and about(700) == "about 12 min left"


def test_job_scenarios_are_estimated_from_their_own_declared_pace() -> None:
    by_name = {p.stem: exp for p, exp in catalogue()}
    poison = by_name["poison-job"]
    assert poison.expected_s and expected_s(poison) == poison.expected_s  # not 3 s per variant
    jobs = [e for e in by_name.values() if e.scenario is not None]
    assert sum(expected_s(e) for e in jobs) >= 60  # six job experiments: workers, locks, timeouts


def test_the_fixed_and_the_guessed_seconds_are_each_scaled_by_what_finished_took() -> None:
    # the second experiment is 30 s of paced load (fixed by its file) and 10 s of guesses
    eta = Eta([10.0, 40.0, 20.0], fixed=[0.0, 30.0, 0.0])
    assert eta.left_s(0.0) == 70.0  # the plan, before anything finished
    eta.finished(5.0)  # all guesses, half of them taken
    fixed, guessed = eta.scales
    assert fixed == pytest.approx(1.0) and guessed < 1.0  # nothing paced has run yet
    assert eta.left_s(0.0) == pytest.approx(30 * fixed + (10 + 20) * guessed)
    eta.finished(30.0 * 1.5 + 10.0)  # the paced part ran 1.5x long, the guesses held
    assert eta.scales[0] > 1.0
    assert eta.left_s(4.0) == pytest.approx(20 * eta.scales[1] - 4)


def test_the_overall_line_names_the_experiment_and_the_time_left() -> None:
    console = Console(width=120, record=True, file=io.StringIO())
    with Progress(console=console, auto_refresh=False) as progress:
        shown = RunProgress(progress, [exp for _, exp in catalogue()])
        shown.start(3, "pushback")
        shown.step("pushback-minus-1: under fault", 2, 5)
        task = progress.tasks[shown.run]
        assert task.description == f"experiment 3/{len(LESSON_ORDER)}: pushback"
        assert task.completed == 2
        assert shown.left().startswith("about ") and shown.left().endswith(" left")
        assert progress.tasks[shown.step_task].description == "pushback-minus-1: under fault"


async def test_a_scenario_reports_progress_through_the_runner() -> None:
    @scenario("test-progress", metrics=("n",))
    async def counting(ctx: ScenarioContext) -> ScenarioResult:
        for done in range(3):
            ctx.progress(f"{ctx.variant.name}: step", done + 1, 3)
        return ScenarioResult({"n": 3.0})

    try:
        seen: list[tuple[str, int, int]] = []
        runner = Runner(Target("127.0.0.1:1", None, {}, {}), lambda *a: seen.append(a))
        exp = Experiment(
            title="t", hypothesis="h", scenario="test-progress", variants=[Variant(name="v")]
        )
        await run_scenario(runner, exp, exp.variants[0], VariantResult(exp.variants[0], "full"))
        assert seen == [("v: step", 1, 3), ("v: step", 2, 3), ("v: step", 3, 3)]
    finally:
        SCENARIOS.pop("test-progress")


@pytest.mark.parametrize("width", [80, 120])
def test_the_verdict_says_what_each_experiment_showed(width: int) -> None:
    results = [demo_result(name) for name in LESSON_ORDER]
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(verdict_screen(results, width))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    for r in results:  # a miss's why is said once, in the missed block above the table
        shown = showed(r) if r.held else missed_line(r, why=False)
        assert r.name in text and " ".join(shown.split()) in flat
    assert text.index("missed: ") < text.index("what it showed")


def test_showed_is_derived_from_the_results() -> None:
    result = demo_result("provider-outage")
    result.verdicts = []  # held: the line shows its numbers (a miss leads with what missed)
    for v, calls in zip(result.variants, (100, 300, 150, 8, 14, 299), strict=True):
        v.phases["fault"].metrics["dependency_calls"] = float(calls)
        v.phases["fault"].metrics["breaker_opened"] = 1.0 if v.variant.name == "full" else 0.0
    assert showed(result) == (
        "dependency_calls: unprotected 100, retry-only 300, grpc-native 150, full 8, "
        "seed-order 14, xds-native 299; "
        "breaker opened: full"
    )
    skipped = ExperimentResult("x", Path("x.yaml"), result.experiment, aborted="no mesh")
    assert showed(skipped) == "nothing measured: no mesh"


async def test_writing_reports_lets_no_library_warning_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = write_report

    def noisy(*args: Any, **kwargs: Any) -> Path:  # what matplotlib did on an empty legend
        warnings.warn("No artists with labels found to put in legend.", UserWarning, stacklevel=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(report_writer, "write_report", noisy)
    # The figures' own warnings are test_plots.py's; drawn here they were 12 of this test's 13 s.
    monkeypatch.setattr(report_md, "plot", lambda *args: [])

    class Replay:  # a runner that returns a recorded result
        target = Target("127.0.0.1:1", None, {}, {}, state_dir=tmp_path)

        async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult:
            return demo_result(name)

        async def close(self) -> None:
            """No load generator to end."""

    names = ["provider-outage", "worker-crash"]
    resolved = [(n, *next((p, e) for p, e in catalogue() if p.stem == n)) for n in names]
    console = Console(width=120, record=True, file=io.StringIO())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked warning fails the test
        with Progress(console=console, auto_refresh=False) as progress:
            shown = RunProgress(progress, [e for _, _, e in resolved])
            with ReportWriter(tmp_path, tmp_path, inline=True) as writer:  # warnings seen here
                await run_rounds(Replay(), resolved, shown, writer)
    assert (tmp_path / "provider-outage" / "report.md").exists()
    assert "No artists" not in capsys.readouterr().err + console.export_text()
