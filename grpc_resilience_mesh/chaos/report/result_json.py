"""result.json: an experiment's result as data (every variant, phase, verdict and repeat
spread; with `samples`, every request), and the trace ids worth opening."""

from __future__ import annotations

from typing import Any

from grpc_resilience_mesh.chaos.report.broken_traces import broken_json
from grpc_resilience_mesh.chaos.report.repeat import spreads
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult


def _phase_json(phase: PhaseResult, samples: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metrics": phase.metrics,
        "faults": [vars(e) for e in phase.timeline],
        "traces": notable_traces(phase),
        "rows": phase.rows,
    }
    if phase.broken_traces:
        out["trace_rules"] = broken_json(phase)
    if samples:
        out["samples"] = [
            {
                "rpc": o.rpc,
                "code": o.code,
                "latency_ms": round(o.latency_s * 1000, 3),
                "at_s": round(o.started_s - phase.load.outcomes[0].started_s, 4)
                if phase.load.outcomes
                else 0.0,
                "degraded": list(o.degraded),
                "status": o.status,
                "charge_id": o.charge_id,
                "trace_id": o.trace_id,
                "detail": o.detail,
            }
            for o in phase.load.outcomes
        ]
    return out


def notable_traces(phase: PhaseResult, n: int = 3) -> dict[str, list[str]]:
    """Trace ids worth opening: the slowest requests, and a few degraded or failed ones."""
    outcomes = phase.load.outcomes
    slowest = sorted(outcomes, key=lambda o: o.latency_s, reverse=True)[:n]
    degraded = [o for o in outcomes if o.degraded][:n]
    failed = [o for o in outcomes if o.code != "OK"][:n]
    return {
        "slowest": [f"{o.trace_id} ({o.latency_s * 1000:.0f} ms)" for o in slowest],
        "degraded": [o.trace_id for o in degraded],
        "failed": [f"{o.trace_id} ({o.code})" for o in failed],
    }


def to_json(result: ExperimentResult, samples: bool = True) -> dict[str, Any]:
    return {
        "name": result.name,
        "file": str(result.path),
        "title": result.experiment.title,
        "hypothesis": result.experiment.hypothesis,
        "held": result.held,
        "verdict": result.verdict,
        "partial": result.partial,
        "aborted": result.aborted,
        "variants": [
            {
                "name": v.variant.name,
                "policy": v.policy,
                "skipped": v.skipped,
                "error": v.error,
                "steady_before": v.steady_before,
                "steady_after": v.steady_after,
                "phases": {k: _phase_json(p, samples) for k, p in v.phases.items()},
            }
            for v in result.variants
        ],
        "verdicts": [vars(v) for v in result.verdicts],
        "capacity": result.capacity,
        "generator_cpu_share": result.generator_share,
        "repeat": [
            {
                "variant": s.variant,
                "phase": s.phase,
                "metric": s.metric,
                "bound": s.bound,
                "values": list(s.values),
                "min": s.low,
                "median": s.median,
                "max": s.high,
                "held": s.held,
                "void": s.void,
                "runs": s.runs,
            }
            for s in spreads(result.repeats)
        ],
        "reference": [r.model_dump() for r in result.experiment.reference],
    }
