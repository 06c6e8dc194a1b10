"""Realistic experiment results without a mesh: the catalogue's own experiment files, with
outcomes and counters shaped like a demo run's (the widest figures a run prints)."""

from __future__ import annotations

from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.registry import SCENARIOS
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.measure import evaluate, load_metrics
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

CODES = ("OK", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE")
OWN_CAPACITY = str(Path(__file__).with_name("own_capacity_overload.yaml"))
"""An open-loop experiment that measures its capacity right before it runs (a fixture)."""


def _load(n: int, seed: int) -> LoadResult:
    outcomes = [
        Outcome(
            rpc="checkout" if i % 4 == 3 else "home",
            code=CODES[(i * (seed + 1)) % len(CODES)],
            latency_s=0.001 + (i % 97) * 0.0517,
            degraded=("recommendations:popular",) if i % 5 == 0 else (),
            started_s=i * 0.01,
            trace_id=f"{i:032x}",
        )
        for i in range(n)
    ]
    return LoadResult(outcomes, elapsed_s=32.026 + seed)


def _gateway_phase(seed: int) -> PhaseResult:
    load = _load(640, seed)
    metrics = {
        **load_metrics(load),
        "dependency_calls": 300.0 + seed,
        "dependency_calls_all": 314.0,
        "retries": 1200.0,
        "breaker_rejections": 90.0 * seed,
        "breaker_opened": float(seed),
        "bulkhead_rejections": 104.0,
        "dependency_bulkhead_rejections": 96.0,
        "fallbacks": 590.0,
        "shed": 1234.0,
    }
    return PhaseResult(load, Snapshot(), metrics)


def _scenario_phase(exp: Experiment, params: dict[str, object], seed: int) -> PhaseResult:
    assert exp.scenario is not None
    names = SCENARIOS[exp.scenario].metrics(params)
    metrics = {
        m: 3722.456 + seed if i % 2 else float(i + seed) for i, m in enumerate(sorted(names))
    }
    rows = [{"case": "421-twice", "state": "completed", "measured_s": [0.0, 2.01, 6.02]}]
    return PhaseResult(LoadResult(), Snapshot(), metrics, rows=rows)


def demo_result(name: str, short: bool = False) -> ExperimentResult:
    """What `mesh demo` prints for `name`, with figures as wide as a real run's (`short`: the
    file's demo form, as `mesh demo` loads it; else the whole file, as `mesh chaos run`)."""
    path, exp = load_experiment(name, short_sweep=short)
    result = ExperimentResult(name, Path(path), exp)
    for seed, variant in enumerate(exp.variants):
        v = VariantResult(variant, variant.policy)
        if exp.scenario is not None:
            v.phases["fault"] = _scenario_phase(exp, {**exp.params, **variant.params}, seed)
        else:
            v.phases["fault"] = _gateway_phase(seed)
            if exp.recovery is not None:
                v.phases["recovery"] = _gateway_phase(seed + 1)
        result.variants.append(v)
    result.verdicts = evaluate(result)
    return result
