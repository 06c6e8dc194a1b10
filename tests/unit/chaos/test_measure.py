"""The runner's metric functions: what a phase's outcomes and counters give, and the verdict.

One percentile definition for the whole project: nearest-rank
(grpc_resilience_mesh.loadgen.percentile). A p99 is a latency some request really had (never
interpolated between two, never beyond the slowest), and it is the same on every report, table and
plot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.metric_names import FATE_METRICS
from grpc_resilience_mesh.chaos.experiment.model import Expectation
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.measure import counter_metrics, evaluate, load_metrics
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome, percentile


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0, 1.0), (50, 50.0), (95, 95.0), (99, 99.0), (99.9, 100.0), (100, 100.0)],
)
def test_percentile_is_nearest_rank(q: float, expected: float) -> None:
    assert percentile([float(v) for v in range(100, 0, -1)], q) == expected


def test_percentile_of_few_values_is_one_of_them() -> None:
    # statistics.quantiles would give 10.0 + extrapolation here; nearest-rank gives the max.
    assert percentile([1.0, 2.0, 10.0], 99) == 10.0
    assert percentile([1.0, 2.0, 10.0], 50) == 2.0
    assert percentile([], 99) == 0.0


def _outcome(rpc: str, code: str, ms: float, degraded: tuple[str, ...] = ()) -> Outcome:
    return Outcome(rpc=rpc, code=code, latency_s=ms / 1000, degraded=degraded)


def test_load_metrics_count_rates_latencies_and_codes() -> None:
    outcomes = [
        _outcome("home", "OK", 10),
        _outcome("home", "OK", 20, ("recommendations:popular",)),
        _outcome("checkout", "OK", 30),
        _outcome("checkout", "UNAVAILABLE", 40),
    ]
    metrics = load_metrics(LoadResult(outcomes, elapsed_s=2.0))
    assert metrics["requests"] == 4
    assert metrics["ok"] == 3 and metrics["errors"] == 1
    assert metrics["ok_rate"] == 0.75 and metrics["error_rate"] == 0.25
    assert metrics["degraded"] == 1 and metrics["served_popular"] == 1
    assert metrics["personalised"] == 1
    assert metrics["p50_ms"] == pytest.approx(20) and metrics["p99_ms"] == pytest.approx(40)
    assert metrics["ok_p99_ms"] == pytest.approx(30)
    assert metrics["goodput_per_s"] == 1.0  # full answers only: a degraded home is not goodput
    assert metrics["home_ok_rate"] == 1.0 and metrics["checkout_ok_rate"] == 0.5
    assert metrics["code.OK"] == 3 and metrics["code.UNAVAILABLE"] == 1


def test_full_degraded_and_failed_are_counted_apart_and_add_up_to_the_requests() -> None:
    outcomes = [
        _outcome("home", "OK", 10),
        _outcome("home", "OK", 20, ("recommendations:popular",)),
        _outcome("home", "OK", 20, ("recommendations:cached-popular",)),
        _outcome("checkout", "OK", 30),
        _outcome("home", "DEADLINE_EXCEEDED", 250),
    ]
    metrics = load_metrics(LoadResult(outcomes, elapsed_s=1.0))
    assert (metrics["full"], metrics["degraded"], metrics["errors"]) == (2, 2, 1)
    assert metrics["full"] + metrics["degraded"] + metrics["errors"] == metrics["requests"]
    assert metrics["full_rate"] == 0.4
    assert metrics["goodput_per_s"] == 2.0


def test_load_metrics_of_no_load_are_zero() -> None:
    metrics = load_metrics(LoadResult())
    assert metrics["requests"] == 0 and metrics["ok_rate"] == 0 and metrics["p99_ms"] == 0
    assert "home_ok_rate" not in metrics


def test_counter_metrics_count_the_dependencys_calls() -> None:
    _, exp = load_experiment("provider-outage")
    dep = exp.dependency

    def key(service: str, name: str, **labels: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
        return (service, name, frozenset(labels.items()))

    snap = Snapshot(
        {
            key(dep, "mesh_server_calls_total", method="/mesh.v1.X/Charge"): 5.0,
            key(dep, "mesh_server_calls_total", method="/mesh.v1.X/GetCharge"): 2.0,
            key("gateway", "mesh_server_calls_total", method="/mesh.v1.G/Home"): 9.0,
            key("gateway", "mesh_client_retries_total"): 3.0,
            key("gateway", "mesh_breaker_transitions_total", to_state="open"): 1.0,
        }
    )
    metrics = counter_metrics(snap, exp)
    assert metrics["dependency_calls_all"] == 7
    assert metrics["calls.Charge"] == 5 and metrics["calls.GetCharge"] == 2
    assert metrics["retries"] == 3 and metrics["breaker_opened"] == 1
    assert metrics["shed"] == 0


def test_requests_refused_by_a_bulkhead_are_told_from_all_its_rejections() -> None:
    _, exp = load_experiment("bulkhead-reject")

    def key(method: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
        labels = {"dependency": "recommendation", "method": method}
        return ("gateway", "mesh_bulkhead_rejections_total", frozenset(labels.items()))

    snap = Snapshot(
        {
            key("/mesh.v1.Recommendation/Recommend"): 96.0,
            key("/mesh.v1.Recommendation/Popular"): 8.0,
        }
    )
    metrics = counter_metrics(snap, exp)
    assert metrics["bulkhead_rejections"] == 104  # a home's Recommend, then its Popular
    assert metrics["dependency_bulkhead_rejections"] == 96


def test_evaluate_checks_each_expectation_and_counts_missing_statuses_as_none() -> None:
    path, exp = load_experiment("provider-outage")
    variant = exp.variants[0]
    expectations = [
        Expectation(variant=variant.name, metric="ok_rate", min=0.9),
        Expectation(variant=variant.name, metric="p99_ms", max=100),
        Expectation(variant=variant.name, metric="code.UNAVAILABLE", max=0),
        Expectation(variant=variant.name, metric="ok_rate", phase="recovery", min=0.5),
    ]
    exp = exp.model_copy(update={"expectations": expectations})
    phase = PhaseResult(LoadResult(), Snapshot(), {"ok_rate": 0.95, "p99_ms": 150.0})
    result = ExperimentResult("provider-outage", Path(path), exp)
    result.variants.append(VariantResult(variant, variant.policy, phases={"fault": phase}))
    verdicts = evaluate(result)
    assert [(v.metric, v.measured, v.passed) for v in verdicts] == [
        ("ok_rate", 0.95, True),
        ("p99_ms", 150.0, False),
        ("code.UNAVAILABLE", 0.0, True),
        ("ok_rate", None, False),
    ]
    assert [v.bound for v in verdicts[:2]] == [">= 0.9", "<= 100"]


def test_fates_are_counted_by_kind_and_add_up_to_the_requests() -> None:
    outcomes = [
        Outcome("home", "OK", 0.01, fate="ok"),
        Outcome("home", "OK", 0.01, fate="ok-after-retry(2)"),
        Outcome("home", "OK", 0.01, ("recommendations:popular",)),  # no trailer: as seen
        Outcome("home", "RESOURCE_EXHAUSTED", 0.01, fate="shed(profile:limit)"),
        Outcome("home", "RESOURCE_EXHAUSTED", 0.01, fate="shed(gateway:rate-limit)"),
        Outcome("home", "DEADLINE_EXCEEDED", 2.0),
    ]
    metrics = load_metrics(LoadResult(outcomes, elapsed_s=1.0))
    fates = {k: v for k, v in metrics.items() if k.startswith("fate.") and v}
    assert fates == {
        "fate.ok": 1,
        "fate.ok-after-retry": 1,
        "fate.ok-degraded": 1,
        "fate.shed": 2,
        "fate.failed-deadline": 1,
    }
    assert sum(metrics[k] for k in FATE_METRICS) == metrics["requests"] == 6


def test_a_phase_whose_fates_do_not_add_up_fails_the_run() -> None:
    path, exp = load_experiment("provider-outage")
    outcomes = [Outcome("home", "OK", 0.01, fate="ok"), Outcome("home", "OK", 0.01, fate="??")]
    fine = [Outcome("home", "OK", 0.01, fate="ok")] * 2
    variants = []
    for variant, load in zip(exp.variants[:2], (outcomes, fine), strict=True):
        phase = PhaseResult(LoadResult(load), Snapshot({}), load_metrics(LoadResult(load)))
        variants.append(VariantResult(variant, "policy.yaml", phases={"fault": phase}))
    result = ExperimentResult("provider-outage", path, exp, variants)
    missed = [v for v in evaluate(result) if v.metric == "fates_unaccounted"]
    assert [(v.variant, v.phase, v.measured, v.passed) for v in missed] == [
        (exp.variants[0].name, "fault", 1.0, False)
    ]
