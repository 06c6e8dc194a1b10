"""The `replicas` check: what happened to the traffic of one replica an experiment broke.

The broken replica is the first kill fault's process, or the replica behind the first fault on one
replica's proxy (e.g. `gateway_to_profile-2`). Times are seconds from the fault's start
(`moved_after_s`) or end (`back_after_s`), read from the trace files: attempts are CLIENT spans of
every caller, a replica's served calls are the SERVER spans in its own file. Under xDS the ejections
are gRPC's A50's, read from the callers' logs (grpc_resilience_mesh/chaos/scenarios/a50_log.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.scenarios import a50_log
from grpc_resilience_mesh.client.traces import Span, load_spans, status_of
from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.telemetry.rotation import generations


def _broken_replica(ctx: CheckContext) -> str | None:
    # By the faults' `type` (this layer does not import the experiment model).
    edges = {e.name for e in topology.EDGES}
    for fault in ctx.experiment.faults_for(ctx.variant):
        if fault.type == "kill":
            return str(getattr(fault, "service"))  # noqa: B009 - a field of KillFault only
        if fault.type == "toxic":
            for proxy in topology.PROXIES:
                if proxy.name == getattr(fault, "edge") and proxy.name not in edges:  # noqa: B009
                    return proxy.upstream.name
    return None


def _window(ctx: CheckContext) -> tuple[float, float | None]:
    """The fault's start and end (its first on and the next off), seconds after the load began."""
    on = next(e.at_s for e in ctx.phase.timeline if e.on)
    off = next((e.at_s for e in ctx.phase.timeline if not e.on and e.at_s >= on), None)
    return on, off


def _mono_s(span: Span, key: str) -> float:
    """A span's epoch nanoseconds as this machine's monotonic seconds (what the load records)."""
    return float(span[key]) / 1e9 - (time.time() - time.monotonic())


async def replicas(ctx: CheckContext) -> dict[str, float]:
    """Requests that failed, attempts that failed on the broken replica's service, ejections,
    how long until the first ejection and until no attempt failed any more (its traffic
    moved), and how long after it came back until it served a call again."""
    replica = _broken_replica(ctx)
    outcomes = ctx.phase.load.outcomes
    if replica is None or not outcomes or not ctx.phase.timeline:
        return {}
    base = topology.replica_of(replica)
    t0 = min(o.started_s for o in outcomes)
    on, off = _window(ctx)
    start, end = t0 + on, None if off is None else t0 + off
    snap = ctx.phase.counters
    attempts = snap.total("mesh_client_attempts_total", dependency=base)
    ok = snap.total("mesh_client_attempts_total", dependency=base, outcome="OK")
    traces = Path(ctx.target.state_dir) / "traces"
    service = topology.service(base).grpc_service
    spans = load_spans(_caller_files(traces, base))
    ejected_at = _ejected_at(ctx, spans, base)
    failed_at = [
        _mono_s(s, "end_ns")
        for s in spans
        if s.get("kind") == "CLIENT"
        and s.get("attributes", {}).get("rpc.service") == service
        and status_of(s) != "OK"
        and start <= _mono_s(s, "end_ns") <= (end if end is not None else float("inf"))
    ]
    found = {
        "failed": float(sum(o.code != "OK" for o in outcomes)),
        "failed_attempts": attempts - ok,
        "ejections": _ejections(ctx, base, ejected_at, start),
        "moved_after_s": max(failed_at, default=start) - start,
    }
    after = [t - start for t in ejected_at if t >= start]
    if after:
        found["first_ejection_s"] = min(after)
    if end is not None and _killed(ctx):
        served = [
            _mono_s(s, "start_ns")
            for s in load_spans(generations(traces / f"{replica}.jsonl"))
            if s.get("kind") == "SERVER" and _mono_s(s, "start_ns") >= end
        ]
        if served:
            found["back_after_s"] = min(served) - end
        else:
            ctx.phase.notes["back_after_s"] = _not_back(ctx, replica, t0)
    return found


def _ejected_at(ctx: CheckContext, spans: list[Span], base: str) -> list[float]:
    """When a replica of `base` was ejected (monotonic s): by our ReplicaRouter's span events,
    or under xDS, where the router steps aside, by gRPC's A50 in the callers' logs."""
    if ctx.variant.xds:
        return a50_log.ejected_at(Path(ctx.target.state_dir), base)
    return [
        float(e["time_ns"]) / 1e9 - (time.time() - time.monotonic())
        for s in spans
        for e in s.get("events", ())
        if e.get("name") == "replica ejected"
        and e.get("attributes", {}).get("mesh.dependency") == base
    ]


def _ejections(ctx: CheckContext, base: str, ejected_at: list[float], start: float) -> float:
    """This phase's ejections: our router's counter, or A50's logged ones from the fault's
    start to the load's end (the logs hold every earlier phase's too)."""
    if not ctx.variant.xds:
        return ctx.phase.counters.total("mesh_replica_ejections_total", dependency=base)
    end = max(o.started_s + o.latency_s for o in ctx.phase.load.outcomes)
    return float(sum(start <= t <= end for t in ejected_at))


def _not_back(ctx: CheckContext, replica: str, t0: float) -> str:
    """Why back_after_s has no value: when the restart began (the kill fault's stop_s), how
    long it took to report SERVING, and how long the load went on after that (s of the load)."""
    load_end = max(o.started_s + o.latency_s for o in ctx.phase.load.outcomes) - t0
    kill = next(f for f in ctx.experiment.faults_for(ctx.variant) if f.type == "kill")
    began = float(getattr(kill, "stop_s", None) or 0.0)
    served = ctx.phase.served_at.get(replica)
    if served is None:
        return f"{replica} never reported SERVING after its restart at {began:.1f} s"
    took = f"its restart at {began:.1f} s took {served - began:.1f} s to report SERVING"
    if served >= load_end:
        return f"{replica} was not back before the load ended at {load_end:.1f} s: {took}"
    return f"{replica} served no call in the {load_end - served:.1f} s of load left after {took}"


def _caller_files(traces: Path, dependency: str) -> list[Path]:
    """The trace files of every process that calls `dependency` (its attempts' spans)."""
    callers = {e.caller for e in topology.EDGES if e.dependency == dependency}
    names = [r.name for c in sorted(callers) for r in topology.replicas(c)]
    return [f for n in names for f in generations(traces / f"{n}.jsonl")]


def _killed(ctx: CheckContext) -> bool:
    return any(f.type == "kill" for f in ctx.experiment.faults_for(ctx.variant))
