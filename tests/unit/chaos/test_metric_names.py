"""The metric names known before a run are the ones the runner, checks and scenarios produce."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.metric_names import available
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.registry import CHECKS, SCENARIOS, Check, CheckContext
from grpc_resilience_mesh.chaos.results import (
    ExperimentResult,
    FaultEvent,
    PhaseResult,
    VariantResult,
)
from grpc_resilience_mesh.chaos.run.measure import counter_metrics, evaluate, load_metrics
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

EXPERIMENT = """
title: t
hypothesis: h
steady_state:
  load: {rpc: [home, checkout], requests: 4}
load: {rpc: [home, checkout], requests: 10, rate_x_capacity: 2}
recovery: {wait_s: 0}
checks: [ledger, quiescence, cancellation, flapping]
variants: [{name: full}]
"""


@pytest.fixture
def exp(tmp_path: Path) -> Experiment:
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT)
    return load_experiment(str(path))[1]


def outcomes() -> LoadResult:
    result = LoadResult(elapsed_s=1.0)
    for i, code in enumerate(("OK", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED")):
        for rpc in ("home", "checkout"):
            result.outcomes.append(
                Outcome(rpc, code, 0.01 * (i + 1), ("recommendations:popular",), started_s=i)
            )
    return result


def counters() -> Snapshot:
    calls = "mesh_server_calls_total"
    labels = frozenset({("method", "/mesh.v1.RecommendationService/Popular")})
    return Snapshot({("recommendation", calls, labels): 3.0})


def test_every_metric_the_runner_computes_is_known(exp: Experiment) -> None:
    computed = {**load_metrics(outcomes()), **counter_metrics(counters(), exp)}
    assert "calls.Popular" in computed and "code.UNAVAILABLE" in computed
    for phase in ("fault", "recovery"):
        assert set(computed) - available(exp, exp.variants[0], phase) == set()


def test_every_fault_phase_extra_is_known(exp: Experiment) -> None:
    extras = {
        "settle_s",
        "aborted",
        "capacity_per_s",
        "capacity_p99_ms",
        "offered_per_s",
        "goodput_vs_capacity",
        "ok_p99_vs_capacity",
        "home_p99_vs_steady",
        "checkout_p99_vs_steady",
        "home_p95_vs_steady",
        "checkout_p95_vs_steady",
    }
    assert extras <= available(exp, exp.variants[0], "fault")
    assert "breakers_not_closed" in available(exp, exp.variants[0], "recovery")


def context(exp: Experiment) -> CheckContext:
    target = Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={})
    phase = PhaseResult(outcomes(), counters(), {})
    phase.timeline = [FaultEvent(0.5, "down", True), FaultEvent(1.5, "down", False)]
    return CheckContext(target, exp, exp.variants[0], phase)


@pytest.mark.parametrize("name", ["cancellation", "flapping"])
async def test_a_check_returns_exactly_what_it_declares(exp: Experiment, name: str) -> None:
    measured = await CHECKS[name](context(exp))
    assert set(measured) == CHECKS[name].metrics
    assert CHECKS[name].metrics <= available(exp, exp.variants[0], "fault")


async def test_a_check_that_returns_an_undeclared_metric_fails_loudly(exp: Experiment) -> None:
    async def sloppy(ctx: CheckContext) -> dict[str, float]:
        return {"declared": 1.0, "p99": 2.0}

    with pytest.raises(RuntimeError, match=r"undeclared metrics \['p99'\]"):
        await Check("sloppy", sloppy, frozenset({"declared"}))(context(exp))


def test_receipt_backoff_declares_one_set_per_case_prefix() -> None:
    params: dict[str, Any] = {"cases": [{"name": "a"}, {"name": "b", "metric_prefix": "giveup_"}]}
    metrics = SCENARIOS["receipt-backoff"].metrics(params)
    assert {"attempts_made", "giveup_attempts_made", "giveup_delivered", "max_drift_ms"} <= metrics
    assert "other_attempts_made" not in metrics


def test_a_count_that_never_happened_is_zero_not_n_a(tmp_path: Path) -> None:
    text = EXPERIMENT + (
        "expectations:\n"
        "  - {variant: full, metric: code.UNAVAILABLE, max: 0}\n"
        "  - {variant: full, metric: calls.Recommend, max: 0}\n"
        "  - {variant: full, metric: aborted, max: 0}\n"
        "  - {variant: full, metric: p99_ms, max: 1000}\n"
    )
    path = tmp_path / "counts.yaml"
    path.write_text(text)
    _, counts = load_experiment(str(path))
    result = ExperimentResult("counts", path, counts)
    result.variants.append(VariantResult(counts.variants[0], "full"))
    result.variants[0].phases["fault"] = PhaseResult(LoadResult(), Snapshot(), {"ok": 1.0})
    verdicts = evaluate(result)
    assert [(v.metric, v.measured, v.passed) for v in verdicts] == [
        ("code.UNAVAILABLE", 0.0, True),
        ("calls.Recommend", 0.0, True),
        ("aborted", 0.0, True),
        ("p99_ms", None, False),
    ]


def test_per_rpc_p95_is_measured_and_compared_with_the_steady_state() -> None:
    from grpc_resilience_mesh.chaos.run.measure import vs_steady

    steady = load_metrics(outcomes())
    fault = {**steady, "checkout_p95_ms": steady["checkout_p95_ms"] * 2}
    ratios = vs_steady(fault, steady)
    assert ratios["checkout_p95_vs_steady"] == pytest.approx(2.0)
    assert ratios["home_p95_vs_steady"] == pytest.approx(1.0)
