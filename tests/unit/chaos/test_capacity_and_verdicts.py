"""Capacity measured once per run, the open-loop rate it gives, the void rule and repeats.

The load generator is replaced by a fake that answers every planned request OK at a known
goodput (no process, no network, no clock)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import AppFault, Expectation, LoadSpec
from grpc_resilience_mesh.chaos.report.repeat import spread_text, spreads
from grpc_resilience_mesh.chaos.report.result_json import to_json
from grpc_resilience_mesh.chaos.report.tables import print_result, run_line
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult, Verdict
from grpc_resilience_mesh.chaos.run.measure import evaluate, exposure, vs_steady
from grpc_resilience_mesh.chaos.run.plan import CALIBRATION_S
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome
from grpc_resilience_mesh.loadgen.protocol import Plan
from tests.unit.chaos.render_fixtures import OWN_CAPACITY

GOODPUT = 200.0


class FakeGenerator:
    """Answers every planned request OK at GOODPUT requests per second."""

    def __init__(self) -> None:
        self.plans: list[Plan] = []

    async def run(self, plan: Plan, *_: object) -> LoadResult:
        self.plans.append(plan)
        outcomes = [Outcome(r.rpc, "OK", 0.01) for r in plan.requests]
        return LoadResult(outcomes, elapsed_s=len(outcomes) / GOODPUT, generator_cpu_s=0.01)

    async def close(self) -> None:
        pass


@pytest.fixture
def runner() -> Runner:
    made = Runner(Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={}))
    made.generator = FakeGenerator()  # type: ignore[assignment]
    return made


def _plans(runner: Runner) -> list[Plan]:
    assert isinstance(runner.generator, FakeGenerator)
    return runner.generator.plans


def test_capacity_is_measured_once_per_run(runner: Runner) -> None:

    async def twice() -> tuple[dict[str, float], dict[str, float]]:
        return await runner.calibrate(LoadSpec()), await runner.calibrate(LoadSpec(requests=5))

    first, second = asyncio.run(twice())
    plans = _plans(runner)
    assert len(plans) == 1  # the second experiment (or repeat) reuses the first measure
    assert plans[0].rate_per_s is None and plans[0].concurrency == 16  # closed loop
    assert plans[0].max_duration_s == CALIBRATION_S
    assert first == second and first["capacity_per_s"] == pytest.approx(GOODPUT)


def test_an_experiment_whose_load_asks_measures_the_capacity_again(runner: Runner) -> None:
    _, shedding = load_experiment(OWN_CAPACITY)
    _, flapping = load_experiment("flapping-dependency")  # checkout, measured once per run
    assert shedding.load.capacity_per_experiment and not flapping.load.capacity_per_experiment

    async def two_rounds() -> None:
        for _ in range(2):
            await runner.calibrate(flapping.load)
            runner.forget_capacity(shedding)  # what run() does first for such an experiment
            await runner.calibrate(shedding.load)

    asyncio.run(two_rounds())
    measured = [sorted({r.rpc for r in plan.requests}) for plan in _plans(runner)]
    assert measured == [["checkout"], ["home"], ["home"]]  # home again for round 2's shedding
    assert runner.remeasured == {("home",)}
    assert set(runner.capacity) == {("home",), ("checkout",)}


def test_an_experiment_that_asks_measures_again_on_the_runs_starting_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a mesh the run started, the last variant stays in place: a shedding one refused the
    next probe's own calls."""

    class OurMesh:
        policy = "full"
        procs: list[object] = []  # no process: no CPU to read

        def record_policy(self, policy: str) -> None:
            done.append(f"recorded {policy}")

    mesh: Any = OurMesh()
    target = Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={}, mesh=mesh)
    runner = Runner(target)
    runner.generator = FakeGenerator()  # type: ignore[assignment]
    done: list[str] = []

    async def nothing(*_: object) -> None:
        return None

    async def set_policy(source: str) -> None:
        done.append(f"policy {source}")

    async def a_variant(_name: str, _path: Path, _exp: object, variant: object) -> VariantResult:
        runner._swapped = True  # what a variant's swap leaves
        raise RuntimeError("not run here")

    def forget(exp: object) -> None:
        done.append("forget")

    monkeypatch.setattr(runner.injector, "reset_all", nothing)
    monkeypatch.setattr(runner, "_set_policy", set_policy)
    monkeypatch.setattr(runner, "run_variant", a_variant)
    monkeypatch.setattr(runner, "forget_capacity", forget)
    for name in (OWN_CAPACITY, "bulkhead-isolation", OWN_CAPACITY):
        path, exp = load_experiment(name)
        asyncio.run(runner.run(name, path, exp))
    # bulkhead-isolation measures nothing again; each OWN_CAPACITY first puts the starting
    # policy back where a variant swapped it (the first: nothing swapped yet), then forgets
    assert done == ["forget", "policy full", "recorded full", "forget"]


def test_rate_x_capacity_offers_that_fraction_of_the_measured_capacity(runner: Runner) -> None:
    spec = LoadSpec(requests=30, concurrency=8, rate_x_capacity=0.3)
    result = asyncio.run(runner._load("under fault", spec))
    plans = _plans(runner)
    calibration, load = plans
    assert calibration.rate_per_s is None
    assert load.rate_per_s == pytest.approx(0.3 * GOODPUT)
    assert result.offered_per_s == pytest.approx(60.0)
    assert len(load.requests) == 30


def test_a_closed_loop_stays_closed(runner: Runner) -> None:
    result = asyncio.run(runner._load("bulkhead", LoadSpec(requests=10, concurrency=10)))
    assert [p.rate_per_s for p in _plans(runner)] == [None]  # no calibration needed, no rate
    assert result.offered_per_s is None


def test_a_foreign_mesh_has_no_cpu_share(runner: Runner) -> None:
    result = asyncio.run(runner._load("x", LoadSpec(requests=10)))
    assert runner.cpu.share is None and "n/a" in runner.cpu.line()
    assert "generator_cpu_share" not in result.cpu_metrics()
    assert result.cpu_metrics()["generator_cpu_ms_per_req"] == pytest.approx(1.0)


def test_vs_steady_divides_by_the_same_variants_steady_state() -> None:
    fault = {"p50_ms": 30.0, "p99_ms": 100.0, "ok_p99_ms": 80.0, "home_p99_ms": 100.0}
    steady = {"p50_ms": 10.0, "p99_ms": 50.0, "ok_p99_ms": 0.0, "home_p99_ms": 25.0}
    assert vs_steady(fault, steady) == {
        "p50_vs_steady": 3.0,
        "p99_vs_steady": 2.0,
        "home_p99_vs_steady": 4.0,  # ok_p99 has no steady base (0): absent, not infinite
    }


def _key(service: str, name: str, **labels: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
    return (service, name, frozenset(labels.items()))


def test_exposure_counts_requests_that_met_each_kind_of_fault() -> None:
    _, exp = load_experiment("provider-outage")  # a latency toxic on recommendation_to_profile
    variant = exp.variants[0]
    snap = Snapshot(
        {
            _key("recommendation", "mesh_client_attempts_total", dependency="profile"): 7.0,
            _key("gateway", "mesh_client_attempts_total", dependency="recommendation"): 9.0,
        }
    )
    assert exposure(exp, variant, snap) == 7.0
    app = AppFault(type="app_fault", service="payment", method="Charge", error_rate=0.5)
    with_app = exp.model_copy(update={"faults": [app]})
    snap = Snapshot({_key("payment", "mesh_faults_injected_total", method="x", code="OK"): 3.0})
    assert exposure(with_app, variant, snap) == 3.0
    assert exposure(exp.model_copy(update={"faults": []}), variant, snap) is None
    # A delay counts every call received on the method: a held call cancelled by its
    # deadline never reaches the injected counter, yet it met the fault.
    held = AppFault(
        type="app_fault", service="profile", method="GetProfile", error_rate=0.0, delay_s=30
    )
    with_delay = exp.model_copy(update={"faults": [held]})
    snap = Snapshot(
        {
            _key(
                "profile", "mesh_server_calls_total", method="/mesh.v1.ProfileService/GetProfile"
            ): 8.0,
            _key("profile", "mesh_server_calls_total", method="/mesh.v1.ProfileService/Other"): 5.0,
        }
    )
    assert exposure(with_delay, variant, snap) == 8.0


def _result(exposures: list[float], value: float = 5.0) -> ExperimentResult:
    path, exp = load_experiment("provider-outage")
    names = [v.name for v in exp.variants[: len(exposures)]]
    exp = exp.model_copy(
        update={"expectations": [Expectation(variant=n, metric="retries", max=10) for n in names]}
    )
    result = ExperimentResult("provider-outage", Path(path), exp)
    for variant, met in zip(exp.variants, exposures, strict=False):
        metrics = {"retries": value, "fault_exposure": met}
        phase = PhaseResult(LoadResult(), Snapshot(), metrics)
        result.variants.append(VariantResult(variant, variant.policy, phases={"fault": phase}))
    result.verdicts = evaluate(result)
    return result


def test_a_variant_that_met_no_fault_is_void_not_held() -> None:
    result = _result([4.0, 0.0])
    met, missed = result.verdicts
    assert (met.mark, missed.mark) == ("PASS", "VOID")
    assert not missed.passed and not result.held  # nothing was tested: no lesson


def test_repeats_report_min_median_max_and_how_many_runs_held() -> None:
    runs = [_result([4.0], 3.0), _result([4.0], 12.0), _result([4.0], 5.0), _result([0.0], 1.0)]
    (spread,) = spreads(runs)
    assert (spread.low, spread.median, spread.high) == (1.0, 4.0, 12.0)
    assert (spread.held, spread.void, spread.runs) == (2, 1, 4)
    assert not spread.always
    assert spread.shown() == "4 [1-12]"
    last = runs[-1]
    last.repeats = runs
    assert not last.held
    assert spread_text([2.0, 2.0]) == "2" and spread_text([]) == "n/a"


def test_held_means_held_in_every_run() -> None:
    runs = [_result([4.0], 3.0), _result([4.0], 5.0)]
    runs[-1].repeats = runs
    assert runs[-1].held
    runs[0].verdicts = [Verdict("x", "fault", "retries", 11.0, "<= 10", False)]
    assert not runs[-1].held


def test_every_result_shows_the_runs_capacity_and_generator_share() -> None:
    result = _result([4.0])
    result.capacity = {"capacity_per_s": 432.6, "capacity_p99_ms": 100.4}
    result.generator_share = 0.098
    console = Console(width=200, record=True, file=io.StringIO())
    print_result(console, result)
    text = console.export_text()
    mix = "+".join(result.experiment.load.rpc)
    assert text.startswith(f"capacity 433 req/s for {mix} (measured once per run for that")
    assert "load generator CPU: 9.8% of the mesh's" in text and "budget" not in text
    result.generator_share = 0.15
    assert "over the 10% budget" in run_line(result)
    assert to_json(result, samples=False)["capacity"]["capacity_per_s"] == 432.6
