"""The capacity probe runs where a figure of it is read (issue 46 item 2): in the demo's form
only for a mix a load's rate, an expectation or a column reads, in the full form for every mix
(its run line prints it); the plan counts the same seconds, and the demo's run line says so.
The load generator is a fake that answers every request OK (no process, no network)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.report.tables import print_result
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult
from grpc_resilience_mesh.chaos.run.capacity_use import probed_mixes
from grpc_resilience_mesh.chaos.run.plan import CALIBRATION_S, plan
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome
from tests.unit.chaos.test_capacity_and_verdicts import FakeGenerator

PROBE = "measuring capacity"


def _runner() -> Runner:
    runner = Runner(Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={}))
    runner.generator = FakeGenerator()  # type: ignore[assignment]
    return runner


def _probes(
    name: str, demo: bool, monkeypatch: pytest.MonkeyPatch, runner: Runner | None = None
) -> tuple[list[str], ExperimentResult]:
    """The probes the runner made for `name` (its run and each variant's fault phase, the
    load under fault faked), and the result."""
    runner = runner or _runner()
    labels: list[str] = []
    load = runner._load

    async def recorded(label: str, *args: Any, **kwargs: Any) -> LoadResult:
        labels.append(label)
        return await load(label, *args, **kwargs)

    async def nothing(*_: object) -> None:
        return None

    async def under_fault(*_: object) -> LoadResult:
        return LoadResult([Outcome("home", "OK", 0.01)], elapsed_s=0.1)

    async def fault_phase_only(_n: str, _p: Path, exp: Any, variant: Any) -> VariantResult:
        result = VariantResult(variant, variant.policy)
        result.phases["fault"] = await runner._fault_phase(exp, variant)
        return result

    monkeypatch.setattr(runner, "_load", recorded)
    monkeypatch.setattr(runner.injector, "reset_all", nothing)
    monkeypatch.setattr(runner, "_load_under", under_fault)
    monkeypatch.setattr(runner, "run_variant", fault_phase_only)
    path, exp = load_experiment(name, short_sweep=demo)
    result = asyncio.run(runner.run(name, path, exp))
    return sorted({label for label in labels if label.startswith(PROBE)}), result


def test_a_demo_form_that_reads_no_probe_figure_runs_no_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probes, result = _probes("deadline-budget", True, monkeypatch)
    assert probes == []
    assert (
        result.capacity == {} and "capacity_per_s" not in result.variants[0].phases["fault"].metrics
    )
    console = Console(width=200, record=True, file=io.StringIO())
    print_result(console, result)
    assert console.export_text().startswith("capacity not probed (no bound of this form reads it)")


def test_a_demo_form_whose_load_rate_reads_the_capacity_still_probes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # flapping-dependency: open loop at rate_x_capacity 0.2 of checkout's capacity
    probes, result = _probes("flapping-dependency", True, monkeypatch)
    assert probes == [f"{PROBE} (once per run)"]
    assert result.capacity["capacity_per_s"] > 0


def test_the_full_form_probes_every_mix_as_its_run_line_prints_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probes, result = _probes("deadline-budget", False, monkeypatch)
    assert probes == [f"{PROBE} (once per run)"]
    assert "capacity_per_s" in result.variants[0].phases["fault"].metrics


def test_an_expectation_on_a_capacity_metric_is_a_reader() -> None:
    _, exp = load_experiment("deadline-budget", short_sweep=True)
    assert probed_mixes(exp) == set()
    variant = exp.variants[0].name
    bound = exp.expectations[0].model_copy(
        update={"variant": variant, "metric": "goodput_vs_capacity"}
    )
    reads = exp.model_copy(update={"expectations": [*exp.expectations, bound]})
    assert probed_mixes(reads) == {tuple(exp.load_for(exp.variants[0]).rpc)}


def test_the_demo_plan_counts_the_probes_the_runner_makes() -> None:
    names = [
        "deadline-budget",
        "payment-lost-response",
        "flapping-dependency",
        "bulkhead-isolation",
    ]
    demo = {p.name: p.capacity_s for p in plan((n, load_experiment(n, True)[1]) for n in names)}
    full = {p.name: p.capacity_s for p in plan((n, load_experiment(n)[1]) for n in names)}
    assert demo == {"deadline-budget": 0.0, "payment-lost-response": 0.0,
                    "flapping-dependency": CALIBRATION_S, "bulkhead-isolation": 0.0}  # fmt: skip
    assert full["deadline-budget"] == CALIBRATION_S and full["bulkhead-isolation"] == CALIBRATION_S


def test_a_demo_form_that_reads_no_figure_shows_one_the_run_measured_already(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = _runner()
    first, flapping = _probes("flapping-dependency", True, monkeypatch, runner)
    again, payment = _probes("payment-lost-response", True, monkeypatch, runner)  # checkout too
    assert first == [f"{PROBE} (once per run)"] and again == []
    assert payment.capacity == flapping.capacity
