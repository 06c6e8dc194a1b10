"""A sweep's figures per load point: what the curve plots and the expectations read.

Pure functions of what the runner collected. The windowed figures count the calls that
*ended* between the sweep's warmup and the end of sending (an adaptive limit starts from its
initial limit; the backlog served after sending stops is not the rate the backend keeps up). The
backend's goodput is its personalised homes: a home whose recommendations the backend served
(a refused or late Recommend still gives an OK home, from the fallback, which is not the
backend's work). Ratios to the same line's lowest point (below 1x: a point where nobody
waits; a line with none has no p99 ratio) and to its 1x point come last, once every point has
run.
"""

from __future__ import annotations

from grpc_resilience_mesh.chaos.experiment.sweep import Sweep, point_name
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.loadgen.in_process import Outcome, percentile
from grpc_resilience_mesh.services import topology

ACCEPTED = "OK"


def _personalised(o: Outcome) -> bool:
    return o.code == ACCEPTED and o.rpc == "home" and not o.degraded


def point_metrics(phase: PhaseResult, sweep: Sweep, x: float) -> dict[str, float]:
    """The figures of one point: goodput in the window, accepted latencies, refusals, CPU."""
    outcomes = phase.load.outcomes
    out: dict[str, float] = {
        "offered_x_capacity": x,
        "declared_capacity_per_s": sweep.capacity_per_s,
    }
    if outcomes:
        t0 = min(o.started_s for o in outcomes)
        rate = phase.metrics.get("offered_per_s") or x * sweep.capacity_per_s
        send_s = len(outcomes) / rate
        window = [o for o in outcomes if sweep.warmup_s <= o.started_s + o.latency_s - t0 <= send_s]
        good = [o.latency_s * 1000 for o in window if _personalised(o)]
        span_s = max(send_s - sweep.warmup_s, 1e-9)
        out["window_goodput_per_s"] = len(good) / span_s
        out["goodput_vs_declared"] = out["window_goodput_per_s"] / sweep.capacity_per_s
        if good:  # no accepted call: no latency (n/a fails a bound; 0 would pass it)
            out["accepted_p50_ms"] = percentile(good, 50)
            out["accepted_p99_ms"] = percentile(good, 99)
    counters = phase.counters
    refused = counters.total("mesh_server_calls_total", sweep.service, code="RESOURCE_EXHAUSTED")
    accepted = counters.total("mesh_server_calls_total", sweep.service, code="OK")
    out["backend_refusals"] = refused
    out["backend_accepted"] = accepted
    out["backend_refusals_per_accepted"] = refused / max(accepted, 1.0)
    out.update(_cpu(phase))
    return out


def _cpu(phase: PhaseResult) -> dict[str, float]:
    """CPU ms per request of each process, and the busiest one's CPU seconds per second."""
    load = phase.load
    n = len(load.outcomes)
    out: dict[str, float] = {}
    if not n or not load.process_cpu_s:
        return out
    for name, used in load.process_cpu_s.items():
        out[f"cpu_ms_per_req.{name}"] = used * 1000 / n
    if "gateway" in load.process_cpu_s:
        out["gateway_cpu_ms_per_req"] = out["cpu_ms_per_req.gateway"]
    busy = [load.busy(s.name) for s in topology.INSTANCES]
    out["busiest_process_busy"] = max((b for b in busy if b is not None), default=0.0)
    return out


def _lines(result: ExperimentResult, sweep: Sweep) -> dict[str, dict[float, VariantResult]]:
    """The measured points of each line, by x (names as sweep.point_name builds them)."""
    lines: dict[str, dict[float, VariantResult]] = {}
    for v in result.variants:
        if "fault" not in v.phases:
            continue
        x = v.phases["fault"].metrics.get("offered_x_capacity")
        if x is None:
            continue
        line = v.variant.name.removesuffix(point_name("", x))
        lines.setdefault(line, {})[x] = v
    return lines


def add_sweep_metrics(result: ExperimentResult) -> None:
    """Every point's figures, then each line's ratios to its lowest and its 1x point."""
    sweep = result.experiment.sweep
    if sweep is None:
        return
    for v in result.variants:
        phase = v.phases.get("fault")
        x = _x_of(v.variant.name, sweep)
        if phase is not None and x is not None:
            phase.metrics.update(point_metrics(phase, sweep, x))
    for points in _lines(result, sweep).values():
        low = points[min(points)].phases["fault"].metrics
        if min(points) >= 1.0:  # no point where nobody waits: no ratio to pass a bound with
            low = {}
        base = points.get(1.0)
        for v in points.values():
            m = v.phases["fault"].metrics
            if low.get("accepted_p99_ms") and "accepted_p99_ms" in m:
                m["accepted_p99_vs_low"] = m["accepted_p99_ms"] / low["accepted_p99_ms"]
            at_capacity = base.phases["fault"].metrics if base else {}
            if at_capacity.get("gateway_cpu_ms_per_req") and "gateway_cpu_ms_per_req" in m:
                m["gateway_cpu_vs_capacity"] = (
                    m["gateway_cpu_ms_per_req"] / at_capacity["gateway_cpu_ms_per_req"]
                )


def _x_of(name: str, sweep: Sweep) -> float | None:
    """The load point a variant's name ends with (`gradient2.5x` -> 5.0)."""
    for x in sorted(sweep.points, key=lambda p: -len(point_name("", p))):
        if name.endswith(point_name("", x)):
            return x
    return None
